// Functional steps (kernels/fc/fc_functional.cpp) against cycle-level ones: N training steps all
// cycle by cycle, all functional, and sampled (`training.detail: {every, first}`) must leave
// MemoryX with the same bytes (weights and optimizer state), step by step the same losses, dense
// and sparse, fp32 and mixed precision, on one wafer and on two; a cycle-level step in the middle
// of a run starts from the exact state the functional steps left. And the sampled run's
// projected wafer time (functional passes timed as their last cycle-level runs) is within 1% of
// the all-cycle-level run's.
#include <gtest/gtest.h>

#include <cstring>

#include "cluster/cluster.hpp"
#include "host/config.hpp"

namespace wse {
namespace {

struct Case {
  bool sparse, mixed;
  uint32_t wafers;
};

std::string name(const Case& c) {
  return std::string(c.sparse ? "sparse" : "dense") + (c.mixed ? "_mixed" : "_fp32") + "_csx" + std::to_string(c.wafers);
}

RunConfig config(const Case& c) {
  RunConfig cfg;
  cfg.source = "in-memory";
  cfg.kernel = "fc_train";
  cfg.mesh = {4, 3};
  cfg.train.layers = {30, 17, 9, 5};  // slices that do not divide the columns evenly
  cfg.train.batch_size = 12;
  cfg.train.num_csx = c.wafers;
  cfg.train.memoryx.optimizer = {"adam", 0.01f};
  cfg.train.memoryx.seed = 11;
  cfg.train.mixed = c.mixed;
  cfg.train.loss_scale = c.mixed ? 128.0f : 1.0f;
  cfg.train.memoryx.encoding = c.sparse ? StreamEncoding::Sparse : c.mixed ? StreamEncoding::DenseHalf : StreamEncoding::Dense;
  cfg.train.memoryx.sparsity.enabled = c.sparse;
  cfg.train.memoryx.sparsity.level = 0.5;
  return cfg;
}

struct Outcome {
  std::vector<double> losses;
  std::vector<uint32_t> correct;
  std::vector<std::vector<uint8_t>> tensors;  // every checkpoint tensor's bytes
  uint64_t cycles = 0;
  std::vector<bool> detailed;
  double eval_loss = 0;
  uint32_t eval_correct = 0;
  uint64_t cycle_level_passes = 0;  // forward passes the mesh ran, cycle by cycle
  uint64_t input_runs = 0, input_wait = 0;  // the input loads run cycle by cycle, their wait for the batch
};

constexpr uint32_t kSteps = 7;

Outcome train(const Case& c, DetailPolicy detail) {
  RunConfig cfg = config(c);
  ClusterConfig cc = cluster_config(cfg);
  cc.detail = detail;
  Cluster cluster(cc, 2);
  const uint32_t batch = cfg.train.batch_size, features = cfg.train.layers[0];
  std::vector<std::vector<float>> x;
  std::vector<std::vector<uint8_t>> y;
  for (uint32_t s = 0; s <= kSteps; ++s) {
    x.emplace_back(size_t(batch) * features);
    y.emplace_back(batch);
    for (size_t i = 0; i < x[s].size(); ++i) x[s][i] = float(((i + 7 * s) * 2654435761u) % 1000) / 1000.0f - 0.3f;
    for (uint32_t b = 0; b < batch; ++b) y[s][b] = uint8_t((x[s][size_t(b) * features] + 0.3f) * 5.0f) % 5;
  }
  Outcome o;
  for (uint32_t s = 0; s < kSteps; ++s) {
    const bool more = s + 1 < kSteps;
    const StepResult r = cluster.train_step(x[s].data(), y[s].data(), more ? x[s + 1].data() : nullptr, more ? y[s + 1].data() : nullptr);
    o.losses.push_back(r.loss), o.correct.push_back(r.correct), o.detailed.push_back(r.detailed);
    o.cycles += r.cycles;
  }
  o.cycle_level_passes = cluster.forward_stats()[0].runs;
  o.input_runs = cluster.input_stats().runs, o.input_wait = cluster.input_stats().wait_cycles;
  const StepResult e = cluster.eval_batch(x[kSteps].data(), y[kSteps].data());
  o.eval_loss = e.loss, o.eval_correct = e.correct;
  const Checkpoint ck = cluster.memoryx().checkpoint();
  for (const auto& t : ck.tensors) {
    std::vector<uint8_t> bytes(t.size() * 4);
    std::memcpy(bytes.data(), t.data.data(), bytes.size());
    o.tensors.push_back(std::move(bytes));
  }
  return o;
}

// An evaluation between training steps, while the next step has already been handed its batch,
// sees the weights of every step so far and leaves training exactly as it was: same losses, same
// bytes, the same steps cycle by cycle.
TEST(FunctionalRuns, AnEvaluationBetweenStepsChangesNothing) {
  const Case c{false, true, 1};
  auto run = [&](bool evaluate) {
    RunConfig cfg = config(c);
    ClusterConfig cc = cluster_config(cfg);
    cc.detail = {DetailPolicy::Mode::Sampled, 2, 1};
    Cluster cluster(cc, 2);
    const uint32_t batch = cfg.train.batch_size, features = cfg.train.layers[0];
    std::vector<std::vector<float>> x(5, std::vector<float>(size_t(batch) * features));
    std::vector<std::vector<uint8_t>> y(5, std::vector<uint8_t>(batch));
    for (uint32_t s = 0; s < 5; ++s)
      for (size_t i = 0; i < x[s].size(); ++i) x[s][i] = float(((i + 3 * s) * 40503u) % 997) / 997.0f, y[s][i % batch] = uint8_t(i % 5);
    Outcome o;
    for (uint32_t s = 0; s < 4; ++s) {
      const StepResult r = cluster.train_step(x[s].data(), y[s].data(), s + 1 < 4 ? x[s + 1].data() : nullptr, s + 1 < 4 ? y[s + 1].data() : nullptr);
      o.losses.push_back(r.loss), o.detailed.push_back(r.detailed);
      if (evaluate && s == 1) o.eval_loss = cluster.eval_batch(x[4].data(), y[4].data()).loss;
    }
    EXPECT_EQ(cluster.memoryx().step(), 4u);
    for (const auto& t : cluster.memoryx().checkpoint().tensors) {
      std::vector<uint8_t> bytes(t.size() * 4);
      std::memcpy(bytes.data(), t.data.data(), bytes.size());
      o.tensors.push_back(std::move(bytes));
    }
    return o;
  };
  const Outcome plain = run(false), with_eval = run(true);
  EXPECT_EQ(with_eval.losses, plain.losses);
  EXPECT_EQ(with_eval.tensors, plain.tensors);
  EXPECT_EQ(with_eval.detailed, (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(plain.detailed, with_eval.detailed);
  EXPECT_GT(with_eval.eval_loss, 0.0);
}

class Functional : public ::testing::TestWithParam<Case> {};

TEST_P(Functional, SameBytesAsCycleLevelWhateverTheSampling) {
  const Outcome all = train(GetParam(), {DetailPolicy::Mode::All});
  const Outcome none = train(GetParam(), {DetailPolicy::Mode::None});
  const Outcome sampled = train(GetParam(), {DetailPolicy::Mode::Sampled, 3, 1});  // steps 0, 2 and 5 cycle by cycle
  EXPECT_EQ(sampled.detailed, (std::vector<bool>{true, false, true, false, false, true, false}));
  // The functional steps really left the mesh alone.
  EXPECT_EQ(all.cycle_level_passes, kSteps);
  EXPECT_EQ(none.cycle_level_passes, 0u);
  EXPECT_EQ(sampled.cycle_level_passes, 3u);
  for (const Outcome* o : {&none, &sampled}) {
    const char* what = o == &none ? "all functional" : "sampled";
    EXPECT_EQ(o->losses, all.losses) << what;
    EXPECT_EQ(o->correct, all.correct) << what;
    EXPECT_EQ(o->eval_loss, all.eval_loss) << what;
    EXPECT_EQ(o->eval_correct, all.eval_correct) << what;
    ASSERT_EQ(o->tensors.size(), all.tensors.size());
    for (size_t t = 0; t < all.tensors.size(); ++t) EXPECT_TRUE(o->tensors[t] == all.tensors[t]) << what << ": checkpoint tensor " << t;
  }
  // The sampled run's wafer time, its functional passes timed as their last cycle-level runs:
  // every step after the first takes the same cycles, so to the cycle (a 1% tolerance let a
  // functional pass timed without its tail pass).
  EXPECT_EQ(sampled.cycles, all.cycles);
  // A cycle-level input load waits from the end of the wafer's last pass, functional ones
  // included: it counted every functional step since the last cycle-level one as waiting (a run
  // sampled every third step reported 60 times the all-cycle-level run's wait per load).
  ASSERT_EQ(sampled.input_runs, 3u);
  EXPECT_LE(double(sampled.input_wait) / 3.0, 1.5 * double(all.input_wait) / double(all.input_runs) + 100.0)
      << sampled.input_wait << " over 3 loads vs " << all.input_wait << " over " << all.input_runs;
  // Every third step and none first: the first step runs cycle by cycle all the same, or the
  // functional steps before the third would have no pass to be timed as (they took a cycle a
  // pass, and the run's wafer time was two steps short).
  const Outcome late = train(GetParam(), {DetailPolicy::Mode::Sampled, 3, 0});
  EXPECT_EQ(late.detailed, sampled.detailed);
  EXPECT_EQ(late.losses, all.losses);
  EXPECT_EQ(late.cycles, all.cycles);
}

INSTANTIATE_TEST_SUITE_P(Runs, Functional,
                         ::testing::Values(Case{false, false, 1}, Case{false, true, 1}, Case{true, false, 1}, Case{true, true, 1},
                                           Case{false, false, 2}, Case{false, true, 2}, Case{true, false, 2}, Case{true, true, 2}),
                         [](const ::testing::TestParamInfo<Case>& i) { return name(i.param); });

}  // namespace
}  // namespace wse
