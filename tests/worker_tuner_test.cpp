// wafer/worker_tuner.hpp: which of a wafer's worker counts a kind of run uses next, from what the
// runs before it measured. The sequences below are worked out by hand from the rule: first run
// on the most workers, second on one, then the one with the fewer host seconds per cycle at its
// last run; the other again after kRetry runs, after twice as many each time a retry finds it
// still slower (at most kMaxRetry), and after kRetry again once the choice changes (a retry finds
// the other faster, or a run finds its own count slower than the other's last); a kind's first
// run on one put off for kRetry runs while the kinds measured on both (kMinKinds at least) all
// found one kClear times as slow.
#include <gtest/gtest.h>

#include "wafer/worker_tuner.hpp"

namespace wse {
namespace {

// Runs `n` runs of `kind` that each pick `expect` and record `ms` milliseconds a kcycle on it.
void runs_on(WorkerTuner& t, const char* kind, uint32_t n, unsigned expect, double ms) {
  for (uint32_t r = 0; r < n; ++r) {
    ASSERT_EQ(t.pick(kind), expect) << "run " << r << " of " << n;
    t.record(kind, expect, ms, 1000);
  }
}

TEST(WorkerTuner, MeasuresBothCountsThenKeepsTheFasterAndRetriesTheOther) {
  WorkerTuner t(2);
  EXPECT_EQ(t.pick("fwd"), 2u);
  t.record("fwd", 2, 3.0, 1000);  // 3 ms a kcycle on two
  EXPECT_EQ(t.pick("fwd"), 1u);
  t.record("fwd", 1, 2.0, 1000);  // 2 ms on one: one is faster
  runs_on(t, "fwd", WorkerTuner::kRetry, 1, 2.0);  // kRetry runs on one ...
  EXPECT_EQ(t.pick("fwd"), 2u);                    // ... then two again
  t.record("fwd", 2, 1.0, 1000);  // the host got faster for two: 1 ms a kcycle
  EXPECT_EQ(t.pick("fwd"), 2u);   // two is now the faster
  // Kinds are measured apart: another kind starts over on the most workers.
  EXPECT_EQ(t.pick("bwd"), 2u);
  const WorkerTuner::Kind& k = t.kinds().at("fwd");
  EXPECT_EQ(k.runs[0], 9u);
  EXPECT_EQ(k.runs[1], 2u);
  EXPECT_EQ(k.total(), 11u);
  EXPECT_DOUBLE_EQ(k.seconds[1], 4.0);
  EXPECT_EQ(k.cycles[1], 2000u);
}

TEST(WorkerTuner, RetriesLessOftenWhileTheChoiceHoldsAndAgainOftenOnceItChanges) {
  WorkerTuner t(2);
  t.record("bwd", 2, 1.0, 1000);  // first run: two, 1 ms a kcycle
  t.record("bwd", 1, 1.6, 1000);  // second: one, 1.6 ms; two is faster
  // Each retry of one finds it slower still: 8, 16, 32, 64, then 64 runs on two between them.
  for (uint32_t wait : {8u, 16u, 32u, 64u, 64u}) {
    runs_on(t, "bwd", wait, 2, 1.0);
    EXPECT_EQ(t.pick("bwd"), 1u) << "retry after " << wait;
    t.record("bwd", 1, 1.6, 1000);
  }
  // 5 runs on one in the 190 after the first two, where one in 8 would have been 23.
  EXPECT_EQ(t.kinds().at("bwd").runs[0], 6u);
  EXPECT_EQ(t.kinds().at("bwd").runs[1], 185u);
  // Two slows down: a run of it takes 2 ms, more than one's last 1.6, so the next runs are on
  // one, and two is tried again after kRetry of them, not 64.
  runs_on(t, "bwd", 10, 2, 1.0);
  runs_on(t, "bwd", 1, 2, 2.0);
  runs_on(t, "bwd", WorkerTuner::kRetry, 1, 1.5);
  EXPECT_EQ(t.pick("bwd"), 2u);
  t.record("bwd", 2, 1.0, 1000);  // two is back to 1 ms: this retry switches back to it
  runs_on(t, "bwd", WorkerTuner::kRetry, 2, 1.0);
  EXPECT_EQ(t.pick("bwd"), 1u);
}

TEST(WorkerTuner, AKindPutsOffItsRunOnOneWorkerWhileTheKindsMeasuredFoundTheMostClearlyFaster) {
  WorkerTuner t(2);
  // A step of four kinds, each first on two workers.
  for (const char* kind : {"in", "fwd", "bwd", "out"}) runs_on(t, kind, 1, 2, 1.0);
  EXPECT_FALSE(t.most_clearly_faster());  // nothing measured on both yet
  // The next step: "in" measures one worker, 1.3 ms a kcycle against 1.0 on two (1.3 >= kClear),
  // which is one kind of the kMinKinds needed, so "fwd" measures one too (1.25).
  runs_on(t, "in", 1, 1, 1.3);
  EXPECT_FALSE(t.most_clearly_faster());
  runs_on(t, "fwd", 1, 1, 1.25);
  EXPECT_TRUE(t.most_clearly_faster());
  // So "bwd" and "out" stay on two, kRetry runs after their first, then measure one.
  runs_on(t, "bwd", WorkerTuner::kRetry, 2, 1.0);
  EXPECT_EQ(t.pick("bwd"), 1u);
  runs_on(t, "bwd", 1, 1, 1.5);  // one worker 1.5x as slow: two from now on, the wait from kRetry
  runs_on(t, "bwd", WorkerTuner::kRetry, 2, 1.0);
  EXPECT_EQ(t.pick("bwd"), 1u);
  // "out" has run on two twice. A kind measured on both that now finds one worker only 1.1x as
  // slow (under kClear) makes the verdict no longer clear: "out" measures one worker next.
  runs_on(t, "out", 1, 2, 1.0);
  EXPECT_EQ(t.pick("out"), 2u);
  runs_on(t, "in", WorkerTuner::kRetry, 2, 1.0);
  runs_on(t, "in", 1, 1, 1.1);
  EXPECT_FALSE(t.most_clearly_faster());
  EXPECT_EQ(t.pick("out"), 1u);
  // And when one worker is the faster in a kind measured, nothing is put off either.
  WorkerTuner u(2);
  for (const char* kind : {"in", "fwd", "bwd"}) runs_on(u, kind, 1, 2, 1.0);
  runs_on(u, "in", 1, 1, 2.0);
  runs_on(u, "fwd", 1, 1, 0.8);
  EXPECT_FALSE(u.most_clearly_faster());
  EXPECT_EQ(u.pick("bwd"), 1u);
}

TEST(WorkerTuner, OneWorkerHasNothingToChooseAndEmptyRunsAreNotMeasured) {
  WorkerTuner one(1);
  EXPECT_EQ(one.pick("fwd"), 1u);
  WorkerTuner t(3);
  t.record("fwd", 3, 1.0, 0);  // a run of no cycles says nothing about speed
  EXPECT_TRUE(t.kinds().empty());
  EXPECT_EQ(t.pick("fwd"), 3u);
}

}  // namespace
}  // namespace wse
