// Sparse checkpoints: the NaN sentinel in weights and optimizer states, finalize, and resuming at
// the same, a higher or a lower level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "host/checkpoint_command.hpp"
#include "memoryx/memoryx.hpp"
#include "scratch.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

const std::vector<LayerSpec> kLayers = {{"fc1", 12, 10}, {"fc2", 10, 4}};

MemoryXConfig config(std::optional<double> level, SparsityInit m = SparsityInit::Random) {
  MemoryXConfig c;
  c.optimizer = {"sgd", 0.1f, 0.9f};
  c.seed = 5;
  if (level) c.sparsity.enabled = true, c.sparsity.level = level, c.sparsity.method = m;
  return c;
}

// One optimizer step with a gradient of ones, so momentum is nonzero wherever a weight is kept.
void train(MemoryX& mx) {
  for (size_t l = 0; l < mx.layers(); ++l) mx.apply_gradient(l, std::vector<float>(size_t(mx.layer(l).in + 1) * mx.layer(l).out, 1.0f));
  mx.finish_step();
}

// Round trip through a file, the way a resumed run reads it.
Checkpoint saved(const MemoryX& mx) {
  const auto path = wse::test::scratch_file("saved.safetensors");  // the process's own (scratch.hpp)
  write_safetensors(path, mx.checkpoint());
  return read_safetensors(path);
}

std::vector<uint8_t> nan_pattern(const Tensor& t) {
  std::vector<uint8_t> kept(t.size());
  for (size_t i = 0; i < t.size(); ++i) kept[i] = !std::isnan(t.data[i]);
  return kept;
}

TEST(SparseCheckpoint, PrunedWeightsAndTheirOptimizerStatesHoldNaN) {
  MemoryX mx(config(0.5), kLayers);
  train(mx);
  train(mx);
  Checkpoint c = saved(mx);
  for (size_t l = 0; l < 2; ++l) {
    // Static: after two steps with nonzero gradients, pruned weights and momenta are still exactly 0.
    for (size_t i = 0; i < mx.mask(l).size(); ++i)
      if (!mx.mask(l)[i]) { ASSERT_TRUE(mx.weight(l).data[i] == 0.0f && mx.states(2 * l)[0].data[i] == 0.0f) << l << " " << i; }
    const std::string w = mx.layer(l).name + ".weight";
    EXPECT_EQ(nan_pattern(*c.find(w)), mx.mask(l)) << w;
    EXPECT_EQ(nan_pattern(*c.find(w + ".momentum")), mx.mask(l)) << w;
    for (size_t i = 0; i < mx.mask(l).size(); ++i)
      if (mx.mask(l)[i]) { EXPECT_EQ(c.find(w)->data[i], mx.weight(l).data[i]); }
    // Biases are dense: no sentinel.
    EXPECT_EQ(nan_pattern(*c.find(mx.layer(l).name + ".bias")), std::vector<uint8_t>(mx.layer(l).out, 1));
  }
  EXPECT_EQ(c.metadata.at("step"), "2");
}

TEST(SparseCheckpoint, WritingStraightFromTheStoreGivesTheSameFileAsACopy) {
  MemoryX mx(config(0.5), {{"fc1", 300, 250}, {"fc2", 250, 4}});  // fc1: 75000 weights, over one write chunk
  train(mx);
  const auto direct = wse::test::scratch_file("direct.safetensors"), copied = wse::test::scratch_file("copied.safetensors");
  mx.write_checkpoint(direct);
  write_safetensors(copied, mx.checkpoint());
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string a = bytes(direct), b = bytes(copied);
  EXPECT_GT(a.size(), 75000u * 4);
  EXPECT_TRUE(a == b) << "files differ";
}

TEST(SparseCheckpoint, ResumingAtTheSameLevelRestoresEverythingBitExactly) {
  MemoryX mx(config(0.5), kLayers);
  train(mx);
  Checkpoint c = saved(mx);
  // Another seed: the pattern must come from the checkpoint, not from a fresh draw.
  MemoryXConfig other = config(0.5);
  other.seed = 999, other.sparsity.seed = 999;
  MemoryX back(other, kLayers, &c);
  EXPECT_EQ(back.step(), 1u);
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(back.param_mask(p), mx.param_mask(p)) << p;
    EXPECT_EQ(0, std::memcmp(back.param(p).data.data(), mx.param(p).data.data(), mx.param(p).size() * 4)) << p;
    EXPECT_EQ(back.states(p)[0].data, mx.states(p)[0].data) << p;
  }
  EXPECT_EQ(back.sparsified()[0].newly_pruned + back.sparsified()[0].regrown, 0u);
}

TEST(SparseCheckpoint, AHigherLevelKeepsEveryPrunedWeightAndPrunesMore) {
  MemoryX mx(config(0.5), kLayers);
  train(mx);
  Checkpoint c = saved(mx);
  MemoryX up(config(0.8, SparsityInit::TopK), kLayers, &c);
  for (size_t l = 0; l < 2; ++l) {
    const auto &old = mx.mask(l), &now = up.mask(l);
    const size_t n = old.size();
    EXPECT_EQ(std::count(now.begin(), now.end(), 0), std::llround(0.8 * double(n))) << l;  // 96 of 120, 32 of 40
    float max_newly = 0, min_kept = 1e9f;
    for (size_t i = 0; i < n; ++i) {
      if (!old[i]) { EXPECT_EQ(now[i], 0) << "a pruned weight came back: " << l << " " << i; }
      if (old[i] && !now[i]) max_newly = std::max(max_newly, std::fabs(mx.weight(l).data[i]));
      if (now[i]) {
        min_kept = std::min(min_kept, std::fabs(mx.weight(l).data[i]));
        EXPECT_EQ(up.weight(l).data[i], mx.weight(l).data[i]);
        EXPECT_EQ(up.states(2 * l)[0].data[i], mx.states(2 * l)[0].data[i]);
      } else {
        EXPECT_EQ(up.weight(l).data[i], 0.0f);
        EXPECT_EQ(up.states(2 * l)[0].data[i], 0.0f);
      }
    }
    EXPECT_LE(max_newly, min_kept) << "topk prunes the smallest of the kept weights";
    EXPECT_EQ(up.sparsified()[l].newly_pruned, uint64_t(std::llround(0.8 * double(n)) - std::llround(0.5 * double(n))));
  }
}

TEST(SparseCheckpoint, ALowerLevelRegrowsWeightsAtZero) {
  MemoryX mx(config(0.5), kLayers);
  train(mx);
  Checkpoint c = saved(mx);
  MemoryX down(config(0.2), kLayers, &c);
  MemoryX again(config(0.2), kLayers, &(c = saved(mx)));
  for (size_t l = 0; l < 2; ++l) {
    const auto &old = mx.mask(l), &now = down.mask(l);
    const size_t n = old.size();
    EXPECT_EQ(std::count(now.begin(), now.end(), 0), std::llround(0.2 * double(n)));  // 24 of 120, 8 of 40
    uint64_t regrown = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!now[i]) { EXPECT_EQ(old[i], 0) << "only prior pruned weights stay pruned"; }
      if (old[i]) {
        EXPECT_EQ(down.weight(l).data[i], mx.weight(l).data[i]);
      } else if (now[i]) {
        ++regrown;
        EXPECT_EQ(down.weight(l).data[i], 0.0f);
        EXPECT_EQ(down.states(2 * l)[0].data[i], 0.0f);
      }
    }
    EXPECT_EQ(regrown, uint64_t(std::llround(0.5 * double(n)) - std::llround(0.2 * double(n))));
    EXPECT_EQ(down.sparsified()[l].regrown, regrown);
    EXPECT_EQ(again.mask(l), now) << "regrowth is deterministic";
  }
}

TEST(SparseCheckpoint, WithoutASparsityBlockItIsAnError) {
  MemoryX mx(config(0.5), kLayers);
  Checkpoint c = saved(mx);
  test::expect_error<UsageError>([&] { MemoryX dense(config({}), kLayers, &c, "checkpoint ck.safetensors"); },
                                 {"checkpoint ck.safetensors", "fc1.weight", "NaN sentinels", "no 'sparsity' block", "finalize-checkpoint"});
}

TEST(SparseCheckpoint, ADenseCheckpointIsSparsifiedFromItsOwnWeights) {
  MemoryXConfig dense_cfg = config({});
  dense_cfg.seed = 77;  // other weights than config(...)'s own init would give
  MemoryX dense(dense_cfg, kLayers);
  train(dense);
  Checkpoint c = saved(dense);
  MemoryX sp(config(0.5, SparsityInit::TopK), kLayers, &c);
  ParamSparsity p{0, "fc1.weight", 0.5, SparsityInit::TopK, 0, ""};
  EXPECT_EQ(sp.mask(0), sparsity_mask(dense.weight(0).data.data(), dense.weight(0).size(), p, {}));
}

TEST(SparseCheckpoint, FinalizeTurnsEverySentinelIntoZero) {
  MemoryX mx(config(0.5), kLayers);
  train(mx);
  Checkpoint c = mx.checkpoint();
  const Checkpoint before = c;
  // fc1: 60 of 120 pruned, fc2: 20 of 40; each in the weight and its momentum.
  EXPECT_EQ(finalize_checkpoint(c), 2u * (60 + 20));
  for (size_t t = 0; t < c.tensors.size(); ++t)
    for (size_t i = 0; i < c.tensors[t].size(); ++i) {
      const float b = before.tensors[t].data[i], a = c.tensors[t].data[i];
      if (std::isnan(b)) EXPECT_EQ(a, 0.0f);
      else EXPECT_EQ(a, b);
    }
  EXPECT_EQ(c.metadata, before.metadata);
  Checkpoint finalized = c;  // (a MemoryX takes its checkpoint's tensors)
  // A finalized checkpoint carries no pattern: a dense run resumes from it without complaint.
  MemoryX dense(config({}), kLayers, &c);
  EXPECT_TRUE(dense.mask(0).empty());
  EXPECT_TRUE(dense.sparsified().empty());
  // Nor does a sparse run that selects only fc1: fc2 is dense, and its zeros (the sentinels just
  // finalized) are streamed, so they get gradients (sparse streams sent only an unmasked
  // parameter's nonzeros, which kept the old pattern as a hidden mask).
  MemoryXConfig only_fc1 = config(0.5);
  only_fc1.encoding = StreamEncoding::Sparse;
  only_fc1.sparsity.patterns = std::vector<SparsityPattern>{{"fc1\\.weight", std::regex("fc1\\.weight"), {}, {}, {}}};
  MemoryX sp(only_fc1, kLayers, &finalized);
  EXPECT_FALSE(sp.mask(0).empty());
  EXPECT_TRUE(sp.mask(1).empty());
  EXPECT_EQ(std::count(sp.weight(1).data.begin(), sp.weight(1).data.end(), 0.0f), 20) << "fc2's finalized zeros";
  uint64_t words = 0;
  for (const auto& s : sp.stream(1, StreamPass::Backward, {{0, 11}})) words += decode_weight_stream(*s, "fc2").weights;
  EXPECT_EQ(words, 11u * 4) << "every weight of fc2 and its bias";
}

}  // namespace
}  // namespace wse
