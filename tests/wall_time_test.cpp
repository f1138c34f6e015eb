// covered_seconds (cluster/wall_time.hpp): the wall time of wafers' runs that may overlap is the
// length of their union, worked by hand here; summing them (what a training report's
// engine_seconds did until the forty-seventh round) counts an overlap twice.
#include <gtest/gtest.h>

#include "cluster/wall_time.hpp"

namespace wse {
namespace {

TEST(WallTime, RunsOneAfterAnotherAddUp) {
  EXPECT_DOUBLE_EQ(covered_seconds({{0, 1}, {1, 3}, {5, 6}}), 4.0);
}

TEST(WallTime, RunsSideBySideCountOnce) {
  // Two wafers: [0, 4) and [1, 3) overlap (4 s, not 6), then [5, 6.5) and [6, 7) (2 s, not 2.5).
  EXPECT_DOUBLE_EQ(covered_seconds({{6, 7}, {0, 4}, {5, 6.5}, {1, 3}}), 6.0);
  // A run that bridges two others joins them: [0, 2), [1.5, 3.5), [3, 4).
  EXPECT_DOUBLE_EQ(covered_seconds({{3, 4}, {0, 2}, {1.5, 3.5}}), 4.0);
  // One run inside another, and the same run twice.
  EXPECT_DOUBLE_EQ(covered_seconds({{0, 10}, {2, 3}, {2, 3}}), 10.0);
}

TEST(WallTime, NothingAndEmptyRunsCoverNothing) {
  EXPECT_DOUBLE_EQ(covered_seconds({}), 0.0);
  EXPECT_DOUBLE_EQ(covered_seconds({{2, 2}, {5, 4}}), 0.0);
  EXPECT_DOUBLE_EQ(covered_seconds({{5, 4}, {0, 1}}), 1.0);
}

}  // namespace
}  // namespace wse
