// A functional training step (training.detail: the wafers' layer programs computed on the host
// with the PEs' summation order, kernels/fc/fc_functional.cpp, under the same cluster actors and
// messages) against an Eigen fp32 step of the same model on the host (host/baseline.cpp): the
// 784-256-256-10 network (a 3-layer FC network like the seed's), batch 64 on 16 x 16 PEs, mixed precision. Read the ratio of
// the two rows' time per step (one run; this machine is noisy).
#include <benchmark/benchmark.h>

#include <vector>

#include "cluster/cluster.hpp"
#include "host/baseline.hpp"
#include "host/config.hpp"

namespace {

using namespace wse;

constexpr uint32_t kSteps = 20;

RunConfig model() {
  RunConfig cfg;
  cfg.source = "bench";
  cfg.kernel = "fc_train";
  cfg.mesh = {16, 16};
  cfg.train.layers = {784, 256, 256, 10};
  cfg.train.batch_size = 64;
  cfg.train.memoryx.optimizer = {"sgd", 0.1f, 0.9f};
  cfg.train.memoryx.encoding = StreamEncoding::DenseHalf;
  cfg.train.mixed = true;
  cfg.train.loss_scale = 128.0f;
  cfg.train.detail.mode = DetailPolicy::Mode::None;
  return cfg;
}

Dataset data() {
  Dataset d;
  d.count = 64 * kSteps, d.features = 784;
  d.images.resize(size_t(d.count) * d.features);
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = float((i * 2654435761u) % 1000) / 1000.0f;
  for (uint32_t i = 0; i < d.count; ++i) d.labels.push_back(uint8_t(i % 10));
  return d;
}

void BM_FunctionalStep(benchmark::State& state) {
  const RunConfig cfg = model();
  const Dataset d = data();
  Cluster cluster(cluster_config(cfg), 1);
  uint64_t s = 0;
  for (auto _ : state) {
    const uint32_t b = uint32_t(s % kSteps) * 64;
    cluster.train_step(&d.images[size_t(b) * 784], &d.labels[b]);
    ++s;
  }
  state.counters["steps_per_second"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FunctionalStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

void BM_EigenStep(benchmark::State& state) {
  const RunConfig cfg = model();
  const Dataset d = data(), test;
  for (auto _ : state) benchmark::DoNotOptimize(train_baseline(cfg, d, test, kSteps));
  // One iteration is kSteps steps (and MemoryX's initialization): per step below.
  state.counters["steps_per_second"] = benchmark::Counter(double(state.iterations() * kSteps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EigenStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

}  // namespace
