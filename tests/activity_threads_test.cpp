// Activity dumps and traces (native and JSON) are bit-identical at any thread count.
#include <gtest/gtest.h>

#include "activity_test_support.hpp"

namespace wse {
namespace {

TEST(ActivityThreads, DumpAndTracesAreIdenticalAtOneTwoAndThreeThreads) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 20;  // rate-limited edges: backpressure through the mesh
  for (Cycle interval : {Cycle(1), Cycle(64), Cycle(1000)}) {
    for (bool json : {false, true}) {
      const std::string kind = json ? "json" : "pftrace";
      test::RecordedGemv one({16, 12}, 150, 170, interval, 1, "t1.wsad", spec, {}, json);
      const std::string trace = test::read_bytes(one.trace_file);
      EXPECT_GT(one.bytes.size(), 0u);
      EXPECT_GT(trace.size(), 1000u);
      for (unsigned threads : {2u, 3u}) {
        test::RecordedGemv other({16, 12}, 150, 170, interval, threads, "t" + std::to_string(threads) + ".wsad", spec, {}, json);
        EXPECT_EQ(one.run.cycles, other.run.cycles);
        EXPECT_TRUE(one.bytes == other.bytes) << "dump, interval " << interval << ", " << threads << " threads";
        EXPECT_TRUE(trace == test::read_bytes(other.trace_file)) << kind << ", interval " << interval << ", " << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace wse
