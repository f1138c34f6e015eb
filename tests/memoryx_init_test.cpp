// MemoryX's store through the lazy initialization graph: the same seed gives the same bits under
// every switch, overwritten init ops are pruned, and a resume runs nothing but the copies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "memoryx/memoryx.hpp"
#include "scratch.hpp"

namespace wse {
namespace {

const std::vector<LayerSpec> kLayers = {{"fc1", 300, 40}, {"fc2", 40, 33}, {"fc3", 33, 10}};

MemoryXConfig config(InitSettings init) {
  MemoryXConfig c;
  c.optimizer = {"adam", 0.01f};
  c.seed = 2024;
  c.init = init;
  c.weight_init = {"normal", 0.0, 0.02, 0.5};  // normal then scale: nn.Linear's default is overwritten
  c.sparsity.enabled = true, c.sparsity.level = 0.5, c.sparsity.method = SparsityInit::TopK;
  return c;
}

void expect_same_bits(const Checkpoint& a, const Checkpoint& b, const std::string& what) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t t = 0; t < a.tensors.size(); ++t)
    EXPECT_EQ(0, std::memcmp(a.tensors[t].data.data(), b.tensors[t].data.data(), a.tensors[t].size() * 4))
        << a.tensors[t].name << " differs: " << what;
}

TEST(MemoryXInit, TheSameSeedGivesTheSameBitsLazyOrEagerPrunedOrNotAtAnyParallelism) {
  const Checkpoint reference = MemoryX(config({false, false, 1}), kLayers).checkpoint();
  for (bool lazy : {true, false})
    for (bool optimize : {true, false})
      for (uint32_t parallel : {1u, 2u, 4u, 7u}) {
        const std::string what = std::string(lazy ? "lazy" : "eager") + (optimize ? " optimized" : "") + " x" + std::to_string(parallel);
        expect_same_bits(MemoryX(config({lazy, optimize, parallel}), kLayers).checkpoint(), reference, what);
      }
  MemoryXConfig other = config({});
  other.seed = 2025;
  EXPECT_NE(MemoryX(other, kLayers).weight(0).data, MemoryX(config({}), kLayers).weight(0).data);
}

TEST(MemoryXInit, OverwrittenInitOpsArePrunedAndOnlyThen) {
  // Per layer: weight [kaiming_uniform, normal, scale], bias [uniform], two Adam states per
  // parameter [zero]: 3 + 1 + 4 = 8 ops, 6 tensors. The config's normal overwrites kaiming.
  const InitStats lazy = MemoryX(config({true, true, 4}), kLayers).init_stats();
  EXPECT_EQ(lazy.tensors, 18u);
  EXPECT_EQ(lazy.ops_recorded, 24u);
  EXPECT_EQ(lazy.ops_pruned, 3u);
  EXPECT_EQ(lazy.ops_executed, 21u);
  EXPECT_LE(lazy.max_in_flight, 4u);
  const InitStats unoptimized = MemoryX(config({true, false, 4}), kLayers).init_stats();
  EXPECT_EQ(unoptimized.ops_pruned, 0u);
  EXPECT_EQ(unoptimized.ops_executed, 24u);
  const InitStats eager = MemoryX(config({false, true, 4}), kLayers).init_stats();
  EXPECT_EQ(eager.ops_pruned, 0u);  // eager ran every op as it was recorded
  EXPECT_EQ(eager.ops_executed, 24u);
  // Eager holds the host model and the store at once.
  EXPECT_EQ(lazy.peak_bytes, lazy.store_bytes);
  EXPECT_EQ(eager.peak_bytes, 2 * eager.store_bytes);
}

TEST(MemoryXInit, NnLinearDefaultBoundsTheWeightsByOneOverSqrtFanIn) {
  MemoryXConfig c;
  c.seed = 3;
  MemoryX mx(c, {{"fc1", 400, 300}});
  const double bound = 1.0 / std::sqrt(400.0);
  for (const Tensor* t : {&mx.weight(0), &mx.bias(0)}) {
    float top = 0;
    for (float v : t->data) top = std::max(top, std::fabs(v));
    EXPECT_LE(top, bound) << t->name;
    EXPECT_GT(top, 0.98 * bound) << t->name;
  }
}

TEST(MemoryXInit, AResumeRunsOnlyTheCheckpointCopies) {
  MemoryX first(config({}), kLayers);
  Checkpoint c = first.checkpoint();
  MemoryX resumed(config({}), kLayers, &c);
  const InitStats& s = resumed.init_stats();
  EXPECT_EQ(s.ops_recorded, 24u + 18u);
  EXPECT_EQ(s.ops_executed, 18u);  // one copy per tensor; every init op was overwritten
  EXPECT_EQ(s.ops_pruned, 24u);
  expect_same_bits(resumed.checkpoint(), first.checkpoint(), "resumed");
}

TEST(MemoryXInit, AResumeFromTheFileReadsEachTensorIntoTheStoreAndMatchesOneFromMemory) {
  MemoryX first(config({}), kLayers);
  first.apply_gradient(0, std::vector<float>(301 * 40, 0.5f));
  first.finish_step();
  const auto path = wse::test::scratch_file("memoryx_init_resume.safetensors");
  write_safetensors(path, first.checkpoint());  // sparse: NaN sentinels in fc1..fc3 weights and states
  Checkpoint in_memory = read_safetensors(path);
  const Checkpoint expected = MemoryX(config({}), kLayers, &in_memory).checkpoint();
  for (bool lazy : {true, false}) {
    MemoryX from_file(config({lazy, true, 3}), kLayers, SafetensorsFile(path));
    EXPECT_EQ(from_file.step(), 1u);
    EXPECT_EQ(from_file.init_stats().ops_executed, lazy ? 18u : 42u);
    expect_same_bits(from_file.checkpoint(), expected, lazy ? "lazy from file" : "eager from file");
    expect_same_bits(from_file.checkpoint(), first.checkpoint(), "against the run that wrote it");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wse
