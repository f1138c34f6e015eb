// What a simulated cycle's synchronization costs on this host: the engine's per-cycle barrier
// (fabric/cycle_barrier.hpp) passed by two threads with nothing else to do, beside the round trip
// of one cache line between two threads (one stores, the other sees it and answers), measured in
// the same process. A barrier can be no cheaper than a line's one-way trip, so `of_round_trip`
// (barrier time over round-trip time) compares across hosts; the round trip itself says how far
// apart the host has put the two threads' cores. On the shared 2-vCPU hosts this project is
// developed on it takes about 100 ns in some minutes and 500 ns in others, and a two-worker run's
// gain over one worker follows it (docs/performance.md, "What limits two threads").
//
// `BM_CycleMail` adds what else crosses between the workers every cycle: each posts wakes of the
// other's tiles to its mailbox (fabric/scheduler.hpp) before the barrier and takes its own mail
// after it, as the engine does; `mail_ns` is what that adds to the barrier's cycle.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "fabric/cycle_barrier.hpp"
#include "fabric/scheduler.hpp"

namespace {

using namespace wse;
using Clock = std::chrono::steady_clock;

// Nanoseconds per round trip of one line between this thread and another, over `trips`.
double line_round_trip_ns(uint64_t trips) {
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  Line ping, pong;
  std::thread other([&] {
    for (uint64_t i = 1; i <= trips; ++i) {
      while (ping.v.load(std::memory_order_acquire) != i) WSE_CPU_RELAX();
      pong.v.store(i, std::memory_order_release);
    }
  });
  const auto t0 = Clock::now();
  for (uint64_t i = 1; i <= trips; ++i) {
    ping.v.store(i, std::memory_order_release);
    while (pong.v.load(std::memory_order_acquire) != i) WSE_CPU_RELAX();
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  other.join();
  return s / double(trips) * 1e9;
}

// Runs body(1) on a second thread and body(0) on this one; nanoseconds per one of the `rounds`
// rounds each makes, from the start of both to the end of the later.
template <class Body>
double two_workers_ns(uint64_t rounds, Body& body) {
  const auto t0 = Clock::now();
  std::thread other(body, 1);
  body(0);
  other.join();
  return std::chrono::duration<double>(Clock::now() - t0).count() / double(rounds) * 1e9;
}

// Two workers pass `generations` barriers, each posting a vote that differs every generation and
// checking the reduction it leaves with (so the figure is never that of a broken barrier).
double barrier_ns(uint64_t generations, bool& ok) {
  CycleBarrier barrier(2);
  std::atomic<bool> good{true};
  auto body = [&](unsigned w) {
    for (uint64_t g = 0; g < generations; ++g) {
      CycleVote v;
      v.next = g + 1 + w;
      v.last = g + w;
      const CycleVote all = barrier.arrive(w, v);
      if (all.next != g + 1 || all.last != g + 1) good = false;
    }
  };
  const double ns = two_workers_ns(generations, body);
  ok = good;
  return ns;
}

// A round of each, alternately, per iteration: the two figures come from the same minutes.
void BM_CycleBarrier(benchmark::State& state) {
  double barrier = 0, trip = 0;
  uint64_t rounds = 0;
  for (auto _ : state) {
    bool ok = true;
    trip += line_round_trip_ns(200000);
    barrier += barrier_ns(200000, ok);
    if (!ok) {
      state.SkipWithError("a worker left the barrier with another generation's votes");
      return;
    }
    ++rounds;
  }
  if (!rounds) return;
  state.counters["barrier_ns"] = barrier / double(rounds);
  state.counters["line_round_trip_ns"] = trip / double(rounds);
  state.counters["of_round_trip"] = barrier / trip;
}

BENCHMARK(BM_CycleBarrier)->Iterations(5)->Unit(benchmark::kMillisecond);

// Two workers for `cycles` cycles: each posts `posts` wakes to the other, passes the barrier,
// and takes what was posted to it (all of the cycle before, and what the other has posted of
// the next one by then, as in the engine), checking that every wake arrives once, in order,
// and no later than the cycle after its own.
double mail_cycle_ns(uint64_t cycles, uint32_t posts, bool& ok) {
  Mailbox to0(posts + 1), to1(posts + 1);
  CycleBarrier barrier(2);
  std::atomic<bool> good{true};
  auto body = [&](unsigned w) {
    Mailbox& out = w ? to0 : to1;
    Mailbox& in = w ? to1 : to0;
    uint64_t taken = 0;  // wakes taken so far: the next one is tile taken % posts of cycle taken / posts
    auto take = [&](const Wake& m) {
      if (m.to != taken % posts || m.cycle() != taken / posts) good = false;
      ++taken;
    };
    CycleVote v;
    uint32_t counts[2] = {};  // this worker's posts to each, with its vote (as CycleEngine's)
    for (uint64_t c = 0; c < cycles; ++c) {
      for (uint32_t k = 0; k < posts; ++k) out.post({TileId(k), c});
      v.next = c + 1;
      v.last = c;
      counts[1 - w] = out.posted();
      barrier.arrive(w, v, counts);
      in.take_until(barrier.mail(w, 1 - w), take);
      if (taken < (c + 1) * posts) good = false;  // the cycle's wakes are all in after the barrier
    }
    barrier.arrive(w, v, counts);
    in.take_until(barrier.mail(w, 1 - w), take);
    if (taken != cycles * posts) good = false;
  };
  const double ns = two_workers_ns(cycles, body);
  ok = good;
  return ns;
}

// Arg: wakes posted each way per cycle. Each iteration times the barrier alone, then with the
// mail, then the round trip, so the three come from the same minutes.
void BM_CycleMail(benchmark::State& state) {
  const auto posts = uint32_t(state.range(0));
  double bare = 0, with_mail = 0, trip = 0;
  uint64_t rounds = 0;
  for (auto _ : state) {
    bool ok = true, ok_bare = true;
    bare += mail_cycle_ns(200000, 0, ok_bare);
    with_mail += mail_cycle_ns(200000, posts, ok);
    trip += line_round_trip_ns(200000);
    if (!ok || !ok_bare) {
      state.SkipWithError("a wake was lost, repeated or taken in the wrong cycle");
      return;
    }
    ++rounds;
  }
  if (!rounds) return;
  state.counters["cycle_ns"] = with_mail / double(rounds);
  state.counters["mail_ns"] = (with_mail - bare) / double(rounds);
  state.counters["line_round_trip_ns"] = trip / double(rounds);
  state.counters["mail_of_round_trip"] = (with_mail - bare) / trip;
}

// 4 a cycle, and 16 and 48: the FC step's band edge carries about 16 crossings a cycle each way
// (a wavelet south, a credit north, per column of a 16-wide mesh), and a cost that grows with
// the posts (about 7 ns a post on the fifty-ninth round's AMD host) shows in the larger two,
// where 4 is mostly the count's line (docs/performance-history.md, fifty-ninth round).
BENCHMARK(BM_CycleMail)->ArgName("posts")->Arg(4)->Arg(16)->Arg(48)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
