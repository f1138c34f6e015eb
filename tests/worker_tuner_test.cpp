// wafer/worker_tuner.hpp: which of a wafer's worker counts a kind of run uses next, from what the
// runs before it measured. The sequences below are worked out by hand from the rule: first run
// on the most workers, second on one, then the one with the fewer host seconds per cycle at its
// last run, the other again every kRetry-th run.
#include <gtest/gtest.h>

#include "wafer/worker_tuner.hpp"

namespace wse {
namespace {

TEST(WorkerTuner, MeasuresBothCountsThenKeepsTheFasterAndRetriesTheOther) {
  WorkerTuner t(2);
  EXPECT_EQ(t.pick("fwd"), 2u);
  t.record("fwd", 2, 3.0, 1000);  // 3 ms a kcycle on two
  EXPECT_EQ(t.pick("fwd"), 1u);
  t.record("fwd", 1, 2.0, 1000);  // 2 ms on one: one is faster
  // Runs 3 .. 7 (totals 2 .. 6 before them) on one; the 8th (total 7) tries two again.
  for (uint32_t total = 2; total < WorkerTuner::kRetry - 1; ++total) {
    EXPECT_EQ(t.pick("fwd"), 1u) << total;
    t.record("fwd", 1, 2.0, 1000);
  }
  EXPECT_EQ(t.pick("fwd"), 2u);
  t.record("fwd", 2, 1.0, 1000);  // the host got faster for two: 1 ms a kcycle
  EXPECT_EQ(t.pick("fwd"), 2u);   // two is now the faster
  // Kinds are measured apart: another kind starts over on the most workers.
  EXPECT_EQ(t.pick("bwd"), 2u);
  const WorkerTuner::Kind& k = t.kinds().at("fwd");
  EXPECT_EQ(k.runs[0], 6u);
  EXPECT_EQ(k.runs[1], 2u);
  EXPECT_EQ(k.total, 8u);
  EXPECT_DOUBLE_EQ(k.seconds[1], 4.0);
  EXPECT_EQ(k.cycles[1], 2000u);
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
