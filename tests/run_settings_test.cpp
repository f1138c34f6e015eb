// The settings a checkpoint records for `--resume` (host/run_settings.hpp), against the list
// docs/config-reference.md gives (training.resume_from's row): a change to any one of them is
// named, and a change to what does not decide the numbers (logging, checkpoints, detail, threads,
// the run's length) is not. Found by a mutation test: optimizer.beta2 left out of the record let
// a resume with another beta2 train on, exit 0, and no test noticed.
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "host/run_settings.hpp"

namespace wse {
namespace {

struct Change {
  std::string field;  // as the message names it
  std::function<void(TrainConfig&, MeshShape&)> apply;
};

TrainConfig with(const std::string& optimizer) {
  TrainConfig tc;
  tc.memoryx.optimizer.kind = optimizer;
  return tc;
}

TrainConfig sparse() {
  TrainConfig tc;
  tc.memoryx.sparsity.enabled = true;
  tc.memoryx.sparsity.level = 0.5;
  return tc;
}

void expect_named(const TrainConfig& base, const std::vector<Change>& changes) {
  const MeshShape mesh{16, 16};
  const RunSettings recorded = run_settings(base, mesh);
  for (const Change& c : changes) {
    TrainConfig tc = base;
    MeshShape m = mesh;
    c.apply(tc, m);
    const std::vector<std::string> said = run_settings_changes(recorded, run_settings(tc, m));
    ASSERT_EQ(said.size(), 1u) << c.field;
    EXPECT_NE(said[0].find("'" + c.field + "'"), std::string::npos) << c.field << ": " << said[0];
    // And through the checkpoint's text, as --resume reads it.
    EXPECT_EQ(run_settings_changes(parse_run_settings(run_settings_text(recorded), "test"), run_settings(tc, m)).size(), 1u) << c.field;
  }
}

TEST(RunSettings, EveryFieldTheDocsListIsNamedWhenItChanges) {
  expect_named(with("sgd"), {
                                {"data.shuffle", [](TrainConfig& t, MeshShape&) { t.shuffle = !t.shuffle; }},
                                {"weights.seed", [](TrainConfig& t, MeshShape&) { t.memoryx.seed += 1; }},
                                {"weights.encoding", [](TrainConfig& t, MeshShape&) { t.memoryx.encoding = StreamEncoding::Sparse; }},
                                {"training.precision", [](TrainConfig& t, MeshShape&) { t.mixed = !t.mixed; }},
                                {"training.loss_scale", [](TrainConfig& t, MeshShape&) { t.loss_scale = 128; }},
                                {"training.num_csx", [](TrainConfig& t, MeshShape&) { t.num_csx = 2; }},
                                {"mesh", [](TrainConfig&, MeshShape& m) { m.height = 8; }},
                                {"optimizer.lr", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.lr *= 2; }},
                                {"optimizer.weight_decay", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.weight_decay = 1e-4f; }},
                                {"optimizer.momentum", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.momentum = 0.5f; }},
                            });
  expect_named(with("adam"), {
                                 {"optimizer.beta1", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.beta1 = 0.8f; }},
                                 {"optimizer.beta2", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.beta2 = 0.99f; }},
                                 {"optimizer.eps", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.eps = 1e-6f; }},
                                 {"optimizer.lr", [](TrainConfig& t, MeshShape&) { t.memoryx.optimizer.lr = 3e-4f; }},
                             });
  expect_named(sparse(), {
                             {"sparsity.sparsity", [](TrainConfig& t, MeshShape&) { t.memoryx.sparsity.level = 0.75; }},
                             {"sparsity.init_method", [](TrainConfig& t, MeshShape&) { t.memoryx.sparsity.method = SparsityInit::TopK; }},
                             {"sparsity.seed", [](TrainConfig& t, MeshShape&) { t.memoryx.sparsity.seed = 7; }},
                             {"sparsity.param_name_patterns",
                              [](TrainConfig& t, MeshShape&) { t.memoryx.sparsity.patterns = std::vector<SparsityPattern>{{"fc1", std::regex("fc1"), 0.9, {}, {}}}; }},
                         });
  // The optimizer's kind changes which fields there are: named, with the fields of each.
  const RunSettings sgd = run_settings(with("sgd"), {16, 16});
  const std::vector<std::string> said = run_settings_changes(sgd, run_settings(with("adam"), {16, 16}));
  ASSERT_FALSE(said.empty());
  bool kind = false;
  for (const std::string& s : said) kind |= s.find("'optimizer.kind'") != std::string::npos;
  EXPECT_TRUE(kind);
  // A sparsity block added to a dense run.
  EXPECT_FALSE(run_settings_changes(run_settings(with("sgd"), {16, 16}), run_settings(sparse(), {16, 16})).empty());
}

TEST(RunSettings, WhatDoesNotDecideTheNumbersIsNotASetting) {
  const TrainConfig base = with("adam");
  TrainConfig tc = base;
  tc.log_every = 3, tc.checkpoint_every = 5, tc.max_steps = 99, tc.epochs = 4, tc.eval_samples = 7;
  tc.checkpoint_dir = "elsewhere", tc.retain_last_layer = !tc.retain_last_layer;
  tc.detail.mode = DetailPolicy::Mode::Sampled, tc.detail.every = 10;
  EXPECT_TRUE(run_settings_changes(run_settings(base, {16, 16}), run_settings(tc, {16, 16})).empty());
}

}  // namespace
}  // namespace wse
