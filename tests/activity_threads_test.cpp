// Activity dumps and traces (native and JSON) are bit-identical at any thread count.
#include <gtest/gtest.h>

#include "activity_test_support.hpp"
#include "host/trace_command.hpp"

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

// A training layer's trace with two wafers stepping at once on the cluster's threads: the one
// observer sees both wafers' passes concurrently (a ThreadSanitizer run found wafer 1 reading
// the observer's state as wafer 0 wrote it); the dump is the same bytes at one and two threads.
TEST(ActivityThreads, ATrainingLayerTraceOfTwoWafersSteppingAtOnceIsTheSameAtAnyThreadCount) {
  const std::filesystem::path cfg = test::scratch_file("two_wafers.yaml");
  std::ofstream(cfg) << "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                        "data: {train_samples: 32, eval_samples: 0}\ntraining: {batch_size: 8, num_csx: 2, max_steps: 1}\n"
                        "optimizer: {kind: sgd, lr: 0.1}\n";
  std::string dumps[2];
  for (unsigned threads : {1u, 2u}) {
    TraceOptions opt;
    opt.config = cfg;
    opt.layer = "fc2";
    opt.pass = "bwd";
    opt.interval = 50;
    opt.threads = threads;
    opt.out = test::process_scratch() / ("two_wafers_" + std::to_string(threads));
    std::filesystem::remove_all(opt.out);
    const TraceResult r = run_trace(opt);
    EXPECT_GT(r.cluster_slices, 0u);
    dumps[threads - 1] = test::read_bytes(r.dump_file);
  }
  EXPECT_FALSE(dumps[0].empty());
  EXPECT_TRUE(dumps[0] == dumps[1]) << "the fc2 bwd dump differs between one and two threads";
}

}  // namespace
}  // namespace wse
