// The cluster's wafers in parallel: host seconds per training step of a num_csx-wafer run with
// the actors on 1 host thread and on as many threads as wafers (each wafer's mesh on one worker).
// The model is a 784-256-256-10 FC network (like the seed's 3-layer one) on 16 x 16 PEs per wafer; a step is emulated cycle by cycle
// on every wafer. Read the ratio of the two rows of one run (this machine is noisy); the results
// are the same bits either way (tests/cluster_step_time_test.cpp checks that).
//
// Args: wafers, host threads. Counters: wafer_cycles (of the last step), steps_per_second.
#include <benchmark/benchmark.h>

#include <vector>

#include "cluster/cluster.hpp"
#include "host/config.hpp"

namespace {

using namespace wse;

void BM_TrainStep(benchmark::State& state) {
  const uint32_t wafers = uint32_t(state.range(0));
  const unsigned threads = unsigned(state.range(1));
  RunConfig cfg;
  cfg.source = "bench";
  cfg.kernel = "fc_train";
  cfg.mesh = {16, 16};
  cfg.train.layers = {784, 256, 256, 10};
  cfg.train.batch_size = 32 * wafers;  // 32 per wafer, whatever the wafer count
  cfg.train.num_csx = wafers;
  cfg.train.memoryx.optimizer = {"sgd", 0.1f, 0.9f};
  cfg.train.memoryx.encoding = StreamEncoding::DenseHalf;
  cfg.train.mixed = true;
  cfg.train.loss_scale = 128.0f;
  Cluster cluster(cluster_config(cfg), threads);
  std::vector<float> x(size_t(cfg.train.batch_size) * 784);
  std::vector<uint8_t> y(cfg.train.batch_size);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) / 1000.0f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = uint8_t(i % 10);
  StepResult r;
  // Each step is handed the next batch, as wse run does, so its input and streams may start early.
  for (auto _ : state) r = cluster.train_step(x.data(), y.data(), x.data(), y.data());
  state.counters["wafer_cycles"] = double(r.cycles);
  state.counters["steps_per_second"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TrainStep)->Args({2, 1})->Args({2, 2})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
