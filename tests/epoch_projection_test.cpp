// The epoch's host time printed at the end of `wse train` (host/epoch_projection.hpp), against
// hand-computed cases: found by a researcher's-sweep audit, a one-step run with
// `detail: {every: 200, first: 1}` said "38.2 s per epoch of 200 steps" for an epoch that ran in
// 0.513 s (199 of its 200 steps functional), and examples/fc_mnist.yaml cut to one step said
// 1.45e+03 s where baseline.md measures about 22.
#include <gtest/gtest.h>

#include "host/epoch_projection.hpp"

namespace wse {
namespace {

DetailPolicy sampled(uint64_t every, uint64_t first) {
  DetailPolicy p;
  p.mode = DetailPolicy::Mode::Sampled, p.every = every, p.first = first;
  return p;
}

TEST(EpochProjection, CountsTheStepsThePolicyRunsCycleByCycle) {
  // The closed form against the policy asked step by step, for a run from step 0.
  for (uint64_t every : {0, 1, 3, 7, 200})
    for (uint64_t first : {0, 1, 2, 5, 9})
      for (uint64_t n : {0, 1, 2, 6, 7, 8, 21, 199, 200, 401}) {
        const DetailPolicy p = sampled(every, first);
        uint64_t asked = 0;
        for (uint64_t s = 0; s < n; ++s) asked += p.detailed(s, 0);
        EXPECT_EQ(detailed_steps_in(p, n), asked) << "every " << every << " first " << first << " n " << n;
      }
  DetailPolicy all, none;
  none.mode = DetailPolicy::Mode::None;
  EXPECT_EQ(detailed_steps_in(all, 937), 937u);
  EXPECT_EQ(detailed_steps_in(none, 937), 0u);
}

TEST(EpochProjection, EachKindOfStepAtItsOwnMean) {
  // Steps 0 and 199 of 200 run cycle by cycle; the run timed 2 of them (0.4 s) and 10
  // functional ones (0.02 s): 2 x 0.2 + 198 x 0.002 = 0.796 s.
  EXPECT_EQ(epoch_projection({0.4, 0.02}, 2, 10, sampled(200, 1), 200), "0.796 s of steps per epoch of 200 (2 of them cycle by cycle)");
  // Every step cycle by cycle: 937 x 1.2 s.
  EXPECT_EQ(epoch_projection({3.6, 0}, 3, 0, DetailPolicy{}, 937), "1.12e+03 s of steps per epoch of 937");
  DetailPolicy none;
  none.mode = DetailPolicy::Mode::None;
  EXPECT_EQ(epoch_projection({0, 0.4}, 0, 100, none, 937), "3.75 s of steps per epoch of 937");  // 937 x 0.004
}

TEST(EpochProjection, SaysSoWhenAKindOfStepWasNotTimed) {
  // The audit's case: one step, cycle by cycle; the epoch's other 198 are functional.
  EXPECT_EQ(epoch_projection({0.191, 0}, 1, 0, sampled(200, 1), 200),
            "an epoch of 200 steps not projected: 198 of them would run functionally, and this run timed none");
  // Had a run timed only functional steps, of an epoch whose first 3 run cycle by cycle.
  EXPECT_EQ(epoch_projection({0, 0.2}, 0, 40, sampled(0, 3), 50),
            "an epoch of 50 steps not projected: 3 of them would run cycle by cycle, and this run timed none");
}

}  // namespace
}  // namespace wse
