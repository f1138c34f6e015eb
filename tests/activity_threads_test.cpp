// Activity dumps and Perfetto traces are bit-identical at any thread count.
#include <gtest/gtest.h>

#include "activity_test_support.hpp"
#include "tools/perfetto_export.hpp"

namespace wse {
namespace {

TEST(ActivityThreads, DumpAndTraceAreIdenticalAtOneAndTwoThreads) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 20;  // rate-limited edges: backpressure through the mesh
  for (Cycle interval : {Cycle(1), Cycle(64), Cycle(1000)}) {
    test::RecordedGemv one({16, 12}, 150, 170, interval, 1, "t1.wsad", spec);
    test::RecordedGemv two({16, 12}, 150, 170, interval, 2, "t2.wsad", spec);
    EXPECT_EQ(one.run.cycles, two.run.cycles);
    EXPECT_GT(one.bytes.size(), 0u);
    EXPECT_TRUE(one.bytes == two.bytes) << "interval " << interval;
    EXPECT_EQ(perfetto_trace(one.view, one.traced, one.phases).dump(),
              perfetto_trace(two.view, two.traced, two.phases).dump())
        << "interval " << interval;
  }
}

}  // namespace
}  // namespace wse
