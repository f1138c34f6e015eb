// Which parameters the sparsity block selects and how their masks are chosen, against
// hand-computed cases and an independent sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/splitmix.hpp"
#include "memoryx/memoryx.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

SparsityPattern pat(const std::string& re, std::optional<double> level = {}, std::optional<SparsityInit> m = {},
                    std::optional<uint64_t> seed = {}) {
  return {re, std::regex(re), level, m, seed};
}

SparsityConfig block(double level, SparsityInit m = SparsityInit::Random) {
  SparsityConfig c;
  c.enabled = true, c.level = level, c.method = m;
  return c;
}

std::vector<float> values(size_t n, uint64_t seed) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = float(double(splitmix64(seed * 7919 + i) >> 11) * 0x1.0p-53 - 0.5);
  return w;
}

size_t zeros(const std::vector<uint8_t>& m) { return size_t(std::count(m.begin(), m.end(), 0)); }

TEST(Sparsity, PrunedCountIsRoundOfLevelTimesNumelHalfAwayFromZero) {
  EXPECT_EQ(pruned_count(0.3, 10), 3u);
  EXPECT_EQ(pruned_count(0.5, 3), 2u);    // 1.5 -> 2
  EXPECT_EQ(pruned_count(0.25, 2), 1u);   // 0.5 -> 1
  EXPECT_EQ(pruned_count(0.3, 200704), 60211u);  // 60211.2
  EXPECT_EQ(pruned_count(0.0, 5), 0u);
}

TEST(Sparsity, MaskCountsPerLayerOfTheModel) {
  MemoryXConfig cfg;
  cfg.sparsity = block(0.3);
  MemoryX mx(cfg, {{"fc1", 784, 256}, {"fc2", 256, 10}});
  // keep = numel - round(0.3 numel): 200704 - 60211 and 2560 - 768; biases (1-D) stay dense.
  EXPECT_EQ(zeros(mx.param_mask(0)), 60211u);
  EXPECT_EQ(zeros(mx.param_mask(2)), 768u);
  EXPECT_TRUE(mx.param_mask(1).empty());
  EXPECT_TRUE(mx.param_mask(3).empty());
  for (size_t p : {0, 2}) {
    const auto& w = mx.param(p).data;
    for (size_t i = 0; i < w.size(); ++i)
      if (!mx.param_mask(p)[i]) { ASSERT_EQ(w[i], 0.0f) << mx.param(p).name << " " << i; }
  }
  ASSERT_EQ(mx.sparsified().size(), 2u);
  EXPECT_EQ(mx.sparsified()[0].pruned, 60211u);
  EXPECT_EQ(mx.sparsified()[1].plan.name, "fc2.weight");
}

TEST(Sparsity, TopkPrunesTheLowestMagnitudes) {
  const std::vector<float> w = {0.5f, -0.1f, 0.3f, -0.9f, 0.05f, 0.2f};
  ParamSparsity p{0, "w", 0.5, SparsityInit::TopK, 1, ""};
  // |w| sorted: 0.05 (4), 0.1 (1), 0.2 (5) are the three lowest.
  EXPECT_EQ(sparsity_mask(w.data(), w.size(), p, {}), (std::vector<uint8_t>{1, 0, 1, 1, 0, 0}));
}

TEST(Sparsity, TopkAgreesWithAnIndependentSort) {
  const auto w = values(1000, 3);
  ParamSparsity p{0, "w", 0.37, SparsityInit::TopK, 1, ""};
  const auto mask = sparsity_mask(w.data(), w.size(), p, {});
  std::vector<size_t> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return std::fabs(w[a]) < std::fabs(w[b]); });
  std::vector<uint8_t> expect(w.size(), 1);
  for (size_t i = 0; i < 370; ++i) expect[order[i]] = 0;
  EXPECT_EQ(mask, expect);
}

TEST(Sparsity, RandomIgnoresTheValuesAndFollowsTheSeed) {
  const auto a = values(5000, 1), b = values(5000, 2);
  ParamSparsity p{0, "w", 0.6, SparsityInit::Random, 42, ""};
  const auto ma = sparsity_mask(a.data(), a.size(), p, {});
  EXPECT_EQ(zeros(ma), 3000u);
  EXPECT_EQ(ma, sparsity_mask(b.data(), b.size(), p, {}));  // same seed, other values: same pattern
  ParamSparsity q = p;
  q.seed = 43;
  EXPECT_NE(ma, sparsity_mask(a.data(), a.size(), q, {}));
  ParamSparsity t = p;
  t.method = SparsityInit::TopK;
  const auto mt = sparsity_mask(a.data(), a.size(), t, {});
  EXPECT_EQ(zeros(mt), 3000u);
  EXPECT_NE(ma, mt);
  // Random keeps large weights too: some kept weight is smaller than some pruned one.
  float max_pruned = 0, min_kept = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ma[i]) min_kept = std::min(min_kept, std::fabs(a[i]));
    else max_pruned = std::max(max_pruned, std::fabs(a[i]));
  }
  EXPECT_LT(min_kept, max_pruned);
}

TEST(Sparsity, FromZerosPrunesExactlyTheZeroWeights) {
  const std::vector<float> w = {0.0f, 1.0f, -0.0f, 2.0f, 0.0f};
  ParamSparsity p{0, "w", 0.0, SparsityInit::FromZeros, 1, ""};
  EXPECT_EQ(sparsity_mask(w.data(), w.size(), p, {}), (std::vector<uint8_t>{0, 1, 0, 1, 0}));
}

const std::vector<ParamInfo> kModel = {
    {"transformer.h.0.attn.c_attn.weight", {64, 192}},
    {"transformer.h.0.attn.c_attn.bias", {192}},
    {"transformer.wte.embedding.weight", {1000, 64}},
    {"transformer.h.0.ln_1.Norm.weight", {64, 1}},
    {"LM_HEAD.weight", {64, 1000}},
    {"transformer.h.0.mlp.c_fc.weight", {64, 256}},
};

std::vector<std::string> names(const SparsityPlan& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan.params) out.push_back(p.name);
  return out;
}

TEST(Sparsity, DefaultSelectionSkipsVectorsEmbeddingsNormsAndLmHead) {
  const SparsityPlan plan = plan_sparsity(block(0.5), kModel, 7);
  EXPECT_EQ(names(plan), (std::vector<std::string>{"transformer.h.0.attn.c_attn.weight", "transformer.h.0.mlp.c_fc.weight"}));
  // Per-parameter seeds: base seed + index of the parameter.
  EXPECT_EQ(plan.params[0].seed, 7u + 0);
  EXPECT_EQ(plan.params[1].seed, 7u + 5);
  EXPECT_TRUE(plan.warnings.empty());
}

// Seed + index is modulo 2^64 (docs/sparsity.md), a defined wrap: the largest seed gives the
// next parameter seed 0 (not undefined behaviour, and not an error), and the parameters' seeds,
// hence their random patterns, stay distinct.
TEST(Sparsity, PerParameterSeedsWrapModulo2To64) {
  const SparsityPlan plan = plan_sparsity(block(0.5), kModel, UINT64_MAX - 2);
  ASSERT_EQ(plan.params.size(), 2u);
  EXPECT_EQ(plan.params[0].seed, UINT64_MAX - 2);
  EXPECT_EQ(plan.params[1].seed, 2u);  // (2^64 - 3) + 5 mod 2^64
  const auto v = values(4096, 1);
  EXPECT_NE(sparsity_mask(v.data(), v.size(), plan.params[0], {}), sparsity_mask(v.data(), v.size(), plan.params[1], {}));
}

TEST(Sparsity, AnExplicitPatternOverridesTheDefaultExclusions) {
  SparsityConfig c = block(0.5);
  c.seed = 100;
  c.patterns = std::vector<SparsityPattern>{pat("bias"), pat("lm_head")};
  const SparsityPlan plan = plan_sparsity(c, kModel, 7);
  EXPECT_EQ(names(plan), (std::vector<std::string>{"transformer.h.0.attn.c_attn.bias"}));  // search is case-sensitive
  EXPECT_EQ(plan.params[0].seed, 101u);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("'lm_head' matches no parameter"), std::string::npos);
}

TEST(Sparsity, TheFirstMatchingPatternWins) {
  SparsityConfig c = block(0.3);
  c.patterns = std::vector<SparsityPattern>{pat("c_attn\\.weight", 0.9, {}, 5), pat("weight", {}, SparsityInit::TopK)};
  SparsityPlan plan = plan_sparsity(c, kModel, 7);
  ASSERT_EQ(plan.params.size(), 5u);  // every *weight*, embeddings, norms and lm_head too: a pattern says so
  EXPECT_EQ(plan.params[0].level, 0.9);
  EXPECT_EQ(plan.params[0].method, SparsityInit::Random);  // the block's method; only the level is overridden
  EXPECT_EQ(plan.params[0].seed, 5u);
  EXPECT_EQ(plan.params[1].name, "transformer.wte.embedding.weight");
  EXPECT_EQ(plan.params[1].level, 0.3);
  EXPECT_EQ(plan.params[1].method, SparsityInit::TopK);
  // The other order: the general pattern shadows the specific one, which then matches nothing.
  c.patterns = std::vector<SparsityPattern>{pat("weight", {}, SparsityInit::TopK), pat("c_attn\\.weight", 0.9)};
  plan = plan_sparsity(c, kModel, 7);
  EXPECT_EQ(plan.params[0].level, 0.3);
  ASSERT_EQ(plan.warnings.size(), 1u);
}

TEST(Sparsity, ASelectedParameterWithoutALevelIsAnError) {
  SparsityConfig c;
  c.enabled = true;
  c.patterns = std::vector<SparsityPattern>{pat("mlp")};
  test::expect_error<UsageError>([&] { plan_sparsity(c, kModel, 1); }, {"transformer.h.0.mlp.c_fc.weight", "pattern 'mlp'", "no level"});
  c.method = SparsityInit::FromZeros;  // needs none
  EXPECT_EQ(plan_sparsity(c, kModel, 1).params.size(), 1u);
}

TEST(Sparsity, UnknownInitMethodIsAnError) {
  test::expect_error<UsageError>([] { parse_sparsity_init("magnitude", "field 'x'"); }, {"unknown init_method 'magnitude'", "random, topk, from_zeros"});
}

}  // namespace
}  // namespace wse
