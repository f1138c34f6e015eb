#pragma once
// The one barrier per cycle. Every worker arrives with what it knows (its next event, its last
// active cycle, whether it failed); every worker leaves with the same reduction of all of them,
// so all workers agree on the next cycle to run without a second barrier. Slots are
// double-buffered by generation parity: a fast worker writing generation g+1 never touches what
// a slow one is still reading from generation g.
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
  explicit CycleBarrier(unsigned workers) : workers_(workers), slots_(2 * workers), spin_(workers) {}

  CycleVote arrive(unsigned worker, const CycleVote& vote) { return wait(worker, post(worker, vote)); }

  // The same in two halves, so a worker can do work that needs no other worker's cycle between
  // posting its vote and waiting for the others' (CycleEngine's run-ahead): post() returns the
  // generation to pass to wait().
  uint64_t post(unsigned worker, const CycleVote& vote) {
    const uint64_t gen = generation_.load(std::memory_order_acquire);
    slots_[(gen & 1) * workers_ + worker].vote = vote;
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == workers_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(gen + 1, std::memory_order_release);
    }
    return gen;
  }
  CycleVote wait(unsigned worker, uint64_t gen) {
    // Spin, then yield. The budget adapts per worker: it doubles while waits end within it (a
    // yield costs more than a short wait) and halves when they do not (the workers being
    // waited for are not running: more busy threads than cores), between 2^8 and 2^16 pauses.
    if (generation_.load(std::memory_order_acquire) == gen) {
      unsigned& budget = spin_[worker].budget;
      unsigned spins = 0;
      for (; generation_.load(std::memory_order_acquire) == gen; ++spins) {
        if (spins < budget) WSE_CPU_RELAX();
        else std::this_thread::yield();
      }
      budget = spins < budget ? std::min(budget * 2, 1u << 16) : std::max(budget / 2, 1u << 8);
    }
    CycleVote all;
    for (unsigned w = 0; w < workers_; ++w) {
      const CycleVote& v = slots_[(gen & 1) * workers_ + w].vote;
      all.next = std::min(all.next, v.next);
      all.last = std::max(all.last, v.last);
      all.failed |= v.failed;
    }
    return all;
  }

 private:
  struct alignas(64) Slot {
    CycleVote vote;
  };
  struct alignas(64) Spin {
    unsigned budget = 1u << 12;
  };
  const unsigned workers_;
  std::vector<Slot> slots_;
  std::vector<Spin> spin_;  // each written only by its own worker
  alignas(64) std::atomic<unsigned> arrived_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};
};

}  // namespace wse
