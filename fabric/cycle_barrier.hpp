#pragma once
// The one barrier per cycle. Every worker arrives with what it knows (its next event, its last
// active cycle, whether it failed); every worker leaves with the same reduction of all of them,
// so all workers agree on the next cycle to run without a second barrier.
//
// Each worker posts its vote, with the generation it is for, on a cache line of its own, and
// waits by reading every other worker's line until each shows this generation: a cycle moves
// each worker's line to the others once, and no line is written by two workers. (It used to
// count arrivals on one shared counter and release the waiters through a shared generation
// word, then read the votes: on two workers three line transfers one after the other where
// this has one. `bench_barrier` puts the old one at a line's round trip between the two cores
// and this one at 0.7-0.8 of it in most runs; docs/performance-history.md, fifteenth round.)
// Slots are double-buffered by generation parity: a fast worker writing generation g+1 never
// touches what a slow one is still reading from generation g (it cannot post g+2 before every
// worker has posted g+1, after reading g).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "fabric/geometry.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WSE_CPU_RELAX() _mm_pause()
#else
#define WSE_CPU_RELAX() ((void)0)
#endif

namespace wse {

struct CycleVote {
  Cycle next = kNever;  // earliest cycle this worker needs to run
  Cycle last = 0;       // last cycle in which this worker stepped a tile
  bool failed = false;
};

class CycleBarrier {
 public:
  explicit CycleBarrier(unsigned workers) : workers_(workers), slots_(2 * workers), mine_(workers) {}

  CycleVote arrive(unsigned worker, const CycleVote& vote) { return wait(worker, post(worker, vote)); }

  // The same in two halves, so a worker can do work that needs no other worker's cycle between
  // posting its vote and waiting for the others' (CycleEngine's run-ahead): post() returns the
  // generation to pass to wait(). Every worker posts the same sequence of generations, so each
  // counts its own.
  uint64_t post(unsigned worker, const CycleVote& vote) {
    const uint64_t gen = mine_[worker].gen++;
    Slot& s = slot(gen, worker);
    s.next.store(vote.next, std::memory_order_relaxed);
    s.last.store(vote.last, std::memory_order_relaxed);
    s.failed.store(vote.failed, std::memory_order_relaxed);
    s.posted.store(gen + 1, std::memory_order_release);  // the vote above goes with it
    return gen;
  }
  // Whether every worker has posted generation `gen` (wait() would return at once): a worker
  // stepping ahead asks it before each further cycle, and stops when the others are done.
  bool all_posted(uint64_t gen) const {
    for (unsigned w = 0; w < workers_; ++w)
      if (slot(gen, w).posted.load(std::memory_order_acquire) != gen + 1) return false;
    return true;
  }
  CycleVote wait(unsigned worker, uint64_t gen) {
    // Spin, then yield. The budget adapts per worker: it doubles while waits end within it (a
    // yield costs more than a short wait) and halves when they do not (the workers being
    // waited for are not running: more busy threads than cores), between 2^8 and 2^16 pauses.
    unsigned& budget = mine_[worker].budget;
    CycleVote all;
    for (unsigned w = 0; w < workers_; ++w) {
      const Slot& s = slot(gen, w);
      if (s.posted.load(std::memory_order_acquire) != gen + 1) {
        unsigned spins = 0;
        for (; s.posted.load(std::memory_order_acquire) != gen + 1; ++spins) {
          if (spins < budget) WSE_CPU_RELAX();
          else std::this_thread::yield();
        }
        budget = spins < budget ? std::min(budget * 2, 1u << 16) : std::max(budget / 2, 1u << 8);
      }
      all.next = std::min(all.next, s.next.load(std::memory_order_relaxed));
      all.last = std::max(all.last, s.last.load(std::memory_order_relaxed));
      all.failed |= s.failed.load(std::memory_order_relaxed);
    }
    return all;
  }

 private:
  // A worker's vote for one parity of generations, on a line only that worker writes: `posted`
  // is the generation + 1 the vote is for (0: none yet).
  struct alignas(64) Slot {
    std::atomic<uint64_t> posted{0};
    std::atomic<Cycle> next{kNever}, last{0};
    std::atomic<bool> failed{false};
  };
  // What only the worker itself reads and writes.
  struct alignas(64) Mine {
    uint64_t gen = 0;
    unsigned budget = 1u << 12;
  };
  Slot& slot(uint64_t gen, unsigned worker) { return slots_[(gen & 1) * workers_ + worker]; }
  const Slot& slot(uint64_t gen, unsigned worker) const { return slots_[(gen & 1) * workers_ + worker]; }
  const unsigned workers_;
  std::vector<Slot> slots_;
  std::vector<Mine> mine_;
};

}  // namespace wse
