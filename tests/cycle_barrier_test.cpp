// The per-cycle barrier on its own (fabric/cycle_barrier.hpp): every worker leaves each
// generation with the reduction of exactly that generation's votes (earliest next, latest last,
// any failure) and with every other worker's mail count for it from that generation, and none
// leaves before every worker has arrived, also when a worker works between posting and waiting
// (the engine's run-ahead), when the workers arrive in turn far apart, and with so many workers
// that a vote's counts take several lines. Run under ThreadSanitizer in CI with the engine's other concurrency tests.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "fabric/cycle_barrier.hpp"

namespace wse {
namespace {

// Worker w's vote at generation g: votes differ between workers and between consecutive
// generations, so a vote read from the wrong generation (the other parity's slot) or a
// reduction that missed a worker gives another result.
CycleVote vote_of(unsigned w, uint64_t g) {
  CycleVote v;
  v.next = 1000 + g * 3 + (w * 7 + g) % 5;
  v.last = g * 2 + (w + g) % 4;
  v.failed = g % 97 == 13 && w == g % 3;
  return v;
}

// Worker `from`'s count of its posts to worker `to` with its vote at generation g: different for
// every pair and generation.
uint32_t mail_of(unsigned from, unsigned to, uint64_t g) { return uint32_t(g * 131 + from * 17 + to * 5 + 1); }

// The reduction worked out from the votes directly.
CycleVote expected(unsigned workers, uint64_t g) {
  CycleVote all;
  for (unsigned w = 0; w < workers; ++w) {
    const CycleVote v = vote_of(w, g);
    all.next = std::min(all.next, v.next);
    all.last = std::max(all.last, v.last);
    all.failed |= v.failed;
  }
  return all;
}

void run_workers(unsigned workers, uint64_t generations, bool run_ahead) {
  CycleBarrier barrier(workers);
  std::vector<std::atomic<unsigned>> arrived(generations);
  std::atomic<uint64_t> wrong{0}, early{0}, wrong_mail{0}, sink{0};
  auto body = [&](unsigned w) {
    uint64_t spin = 0;
    std::vector<uint32_t> mail(workers);
    for (uint64_t g = 0; g < generations; ++g) {
      arrived[g].fetch_add(1, std::memory_order_relaxed);
      for (unsigned v = 0; v < workers; ++v) mail[v] = mail_of(w, v, g);
      const uint64_t gen = barrier.post(w, vote_of(w, g), mail);
      // Work between post and wait, longer for some workers and generations than others.
      if (run_ahead && (g + w) % 3 == 0)
        for (unsigned k = 0; k < 200 * (w + 1); ++k) spin = spin * 31 + k;
      const CycleVote all = barrier.wait(w, gen);
      if (arrived[g].load(std::memory_order_relaxed) != workers) early.fetch_add(1);
      const CycleVote want = expected(workers, g);
      if (all.next != want.next || all.last != want.last || all.failed != want.failed) wrong.fetch_add(1);
      for (unsigned from = 0; from < workers; ++from)
        if (barrier.mail(w, from) != mail_of(from, w, g)) wrong_mail.fetch_add(1);
    }
    sink.store(spin, std::memory_order_relaxed);  // keeps the work from being optimized away
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(body, w);
  body(0);
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0u) << "a worker left a generation before every worker had arrived";
  EXPECT_EQ(wrong.load(), 0u) << "a worker left with another reduction than its generation's votes";
  EXPECT_EQ(wrong_mail.load(), 0u) << "a worker read another generation's (or worker's) mail count";
}

TEST(CycleBarrier, TwoWorkersLeaveEachGenerationWithItsOwnReduction) { run_workers(2, 20000, false); }

TEST(CycleBarrier, ThreeWorkersWithWorkBetweenPostAndWait) { run_workers(3, 20000, true); }

TEST(CycleBarrier, MoreWorkersThanCores) { run_workers(5, 3000, true); }

// 4 + 13 words a vote: three lines a slot, the counts for workers 4-11 on the second, 12 on the third.
TEST(CycleBarrier, ThirteenWorkersWhoseCountsTakeThreeLines) { run_workers(13, 300, true); }

// One worker alone passes at once, with its own vote.
TEST(CycleBarrier, OneWorker) {
  CycleBarrier barrier(1);
  for (uint64_t g = 0; g < 10; ++g) {
    const CycleVote all = barrier.arrive(0, vote_of(0, g));
    EXPECT_EQ(all.next, vote_of(0, g).next);
    EXPECT_EQ(all.last, vote_of(0, g).last);
    EXPECT_EQ(all.failed, vote_of(0, g).failed);
  }
}

// The engine's pause at a sample boundary: two arrive() in a row after a wait, as at a boundary.
TEST(CycleBarrier, ArriveTwiceAfterAWait) {
  // As the engine at a sample boundary: after a cycle's wait, two arrivals more, with the same
  // mail counts (nothing is posted between them); a count read after any of them is the last.
  CycleBarrier barrier(2);
  std::atomic<int> bad{0};
  auto body = [&](unsigned w) {
    for (uint64_t g = 0; g < 3000; g += 3) {
      const uint32_t mail[2] = {mail_of(w, 0, g), mail_of(w, 1, g)};
      if (barrier.wait(w, barrier.post(w, vote_of(w, g), mail)).next != expected(2, g).next) ++bad;
      if (barrier.mail(w, 1 - w) != mail_of(1 - w, w, g)) ++bad;
      if (barrier.arrive(w, vote_of(w, g + 1), mail).last != expected(2, g + 1).last) ++bad;
      if (barrier.arrive(w, vote_of(w, g + 2), mail).failed != expected(2, g + 2).failed) ++bad;
      if (barrier.mail(w, 1 - w) != mail_of(1 - w, w, g)) ++bad;
    }
  };
  std::thread t(body, 1);
  body(0);
  t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace wse
