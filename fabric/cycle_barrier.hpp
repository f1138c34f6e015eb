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
//
// A vote also carries its worker's mail counts: how many wakes it has posted so far to each other
// worker's mailbox (fabric/scheduler.hpp), which that worker reads after the barrier to take its
// mail. On the line the reader has just brought over to see the vote, the count costs no
// transfer of its own; a count on a line apart took one more, after the barrier, before the
// first wake could be read (a line's trip between the cores, which the project host makes 100 or
// 400 ns from minute to minute: `bench_barrier`'s `BM_CycleMail` cycle at 16 posts 20-290 ns
// shorter this way, beside the count apart in one process; docs/performance-history.md, sixtieth
// round). Up to 4 workers, a slot is one line; each 8 workers more add a line.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
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
  explicit CycleBarrier(unsigned workers)
      : workers_(workers), lines_per_slot_((kFirstCount + workers + 7) / 8), lines_(size_t(2) * workers * lines_per_slot_), mine_(workers) {}

  CycleVote arrive(unsigned worker, const CycleVote& vote, std::span<const uint32_t> mail = {}) {
    return wait(worker, post(worker, vote, mail));
  }

  // The same in two halves, so a worker can do work that needs no other worker's cycle between
  // posting its vote and waiting for the others' (CycleEngine's run-ahead): post() returns the
  // generation to pass to wait(). Every worker posts the same sequence of generations, so each
  // counts its own. `mail[v]`: the wakes this worker has posted to worker v's mailbox so far
  // (all of them published with the vote; fewer than `workers` figures: none to the rest).
  uint64_t post(unsigned worker, const CycleVote& vote, std::span<const uint32_t> mail = {}) {
    const uint64_t gen = mine_[worker].gen++;
    const size_t s = slot(gen, worker);
    for (size_t v = 0; v < mail.size() && v < workers_; ++v) word(s, kFirstCount + v).store(mail[v], std::memory_order_relaxed);
    word(s, kNext).store(vote.next, std::memory_order_relaxed);
    word(s, kLast).store(vote.last, std::memory_order_relaxed);
    word(s, kFailed).store(vote.failed, std::memory_order_relaxed);
    word(s, kPosted).store(gen + 1, std::memory_order_release);  // the vote and the mail above go with it
    return gen;
  }
  // Whether every worker has posted generation `gen` (wait() would return at once): a worker
  // stepping ahead asks it before each further cycle, and stops when the others are done.
  bool all_posted(uint64_t gen) const {
    for (unsigned w = 0; w < workers_; ++w)
      if (word(slot(gen, w), kPosted).load(std::memory_order_acquire) != gen + 1) return false;
    return true;
  }
  CycleVote wait(unsigned worker, uint64_t gen) {
    // Spin, then yield. The budget adapts per worker: it doubles while waits end within it (a
    // yield costs more than a short wait) and halves when they do not (the workers being
    // waited for are not running: more busy threads than cores), between 2^8 and 2^16 pauses.
    unsigned& budget = mine_[worker].budget;
    CycleVote all;
    for (unsigned w = 0; w < workers_; ++w) {
      const size_t s = slot(gen, w);
      const std::atomic<uint64_t>& posted = word(s, kPosted);
      if (posted.load(std::memory_order_acquire) != gen + 1) {
        unsigned spins = 0;
        for (; posted.load(std::memory_order_acquire) != gen + 1; ++spins) {
          if (spins < budget) WSE_CPU_RELAX();
          else std::this_thread::yield();
        }
        budget = spins < budget ? std::min(budget * 2, 1u << 16) : std::max(budget / 2, 1u << 8);
      }
      all.next = std::min(all.next, Cycle(word(s, kNext).load(std::memory_order_relaxed)));
      all.last = std::max(all.last, Cycle(word(s, kLast).load(std::memory_order_relaxed)));
      all.failed |= word(s, kFailed).load(std::memory_order_relaxed) != 0;
    }
    return all;
  }
  // The wakes worker `from` had posted to `worker` when it posted the generation `worker` last
  // waited for (0 before any): read after that wait, to take the mail up to there.
  uint32_t mail(unsigned worker, unsigned from) const {
    const uint64_t gens = mine_[worker].gen;
    return gens ? uint32_t(word(slot(gens - 1, from), kFirstCount + worker).load(std::memory_order_relaxed)) : 0;
  }

 private:
  // A worker's vote for one parity of generations: lines only that worker writes, words of 8
  // bytes. `posted` is the generation + 1 the vote is for (0: none yet); then the vote, then
  // one mail count per worker.
  enum Word : size_t { kPosted, kNext, kLast, kFailed, kFirstCount };
  static_assert(sizeof(Cycle) == sizeof(uint64_t));
  struct alignas(64) Line {
    std::atomic<uint64_t> word[8] = {};
  };
  // What only the worker itself reads and writes.
  struct alignas(64) Mine {
    uint64_t gen = 0;
    unsigned budget = 1u << 12;
  };
  // The first line of a slot; its word k.
  size_t slot(uint64_t gen, unsigned worker) const { return ((gen & 1) * workers_ + worker) * lines_per_slot_; }
  std::atomic<uint64_t>& word(size_t slot, size_t k) { return lines_[slot + k / 8].word[k % 8]; }
  const std::atomic<uint64_t>& word(size_t slot, size_t k) const { return lines_[slot + k / 8].word[k % 8]; }
  const unsigned workers_;
  const size_t lines_per_slot_;
  std::vector<Line> lines_;
  std::vector<Mine> mine_;
};

}  // namespace wse
