// The run YAML's `sparsity:` block and MemoryX's init switches: what they parse to, and the
// errors for a bad level, init_method or regex.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "host/config.hpp"
#include "scratch.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

RunConfig load(const std::string& extra) {
  const auto path = wse::test::scratch_file("sparsity.yaml");  // the process's own (scratch.hpp)
  const bool own_model = extra.find("model:") != std::string::npos;
  std::ofstream(path) << "kernel: fc_train\nmesh: {width: 4, height: 2}\n" << (own_model ? "" : "model: {layers: [784, 16, 10]}\n") << extra;
  return load_run_config(path);
}

TEST(SparsityConfig, NoBlockMeansDenseStreams) {
  RunConfig c = load("");
  EXPECT_FALSE(c.train.memoryx.sparsity.enabled);
  EXPECT_EQ(c.train.memoryx.encoding, StreamEncoding::Dense);
}

TEST(SparsityConfig, ABlockWithAListOfPatterns) {
  RunConfig c = load("sparsity:\n  sparsity: 0.9\n  init_method: topk\n  seed: 1234\n  param_name_patterns:\n    - fc1.weight\n    - fc2\\.weight\n");
  const SparsityConfig& s = c.train.memoryx.sparsity;
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(*s.level, 0.9);
  EXPECT_EQ(s.method, SparsityInit::TopK);
  EXPECT_EQ(*s.seed, 1234u);
  ASSERT_EQ(s.patterns->size(), 2u);
  EXPECT_EQ((*s.patterns)[1].pattern, "fc2\\.weight");
  EXPECT_EQ(c.train.memoryx.encoding, StreamEncoding::Sparse);  // zeros are never sent
}

TEST(SparsityConfig, ADictOfOverridesKeepsTheWrittenOrder) {
  RunConfig c = load(
      "sparsity:\n  init_method: topk\n  param_name_patterns:\n    fc2.weight: {sparsity: 0.4, init_method: random, seed: 9}\n"
      "    fc.*weight:\n      sparsity: 0.3\n");
  const auto& p = *c.train.memoryx.sparsity.patterns;
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pattern, "fc2.weight");
  EXPECT_EQ(*p[0].level, 0.4);
  EXPECT_EQ(*p[0].method, SparsityInit::Random);
  EXPECT_EQ(*p[0].seed, 9u);
  EXPECT_EQ(p[1].pattern, "fc.*weight");
  EXPECT_EQ(*p[1].level, 0.3);
  EXPECT_FALSE(p[1].method.has_value());
  EXPECT_FALSE(c.train.memoryx.sparsity.level.has_value());
}

TEST(SparsityConfig, AScalarIsTheLevel) {
  RunConfig c = load("sparsity: 0.25\n");
  EXPECT_EQ(*c.train.memoryx.sparsity.level, 0.25);
  EXPECT_EQ(c.train.memoryx.sparsity.method, SparsityInit::Random);
}

TEST(SparsityConfig, ALevelOutsideZeroToOneIsAnError) {
  for (const char* bad : {"1.0", "-0.1", "1.5", "abc"})
    test::expect_error<ConfigError>([&] { load(std::string("sparsity:\n  sparsity: ") + bad + "\n"); },
                                    {"sparsity.yaml", "'sparsity.sparsity'", "[0, 1)"});
  test::expect_error<ConfigError>([] { load("sparsity:\n  param_name_patterns:\n    fc1: {sparsity: 1}\n"); },
                                  {"'sparsity.param_name_patterns.fc1.sparsity'", "[0, 1)"});
}

TEST(SparsityConfig, AnUnknownInitMethodIsAnError) {
  test::expect_error<ConfigError>([] { load("sparsity:\n  sparsity: 0.5\n  init_method: magnitude\n"); },
                                  {"sparsity.yaml", "'sparsity.init_method'", "unknown init_method 'magnitude'"});
}

TEST(SparsityConfig, ARegexThatDoesNotCompileIsAnError) {
  test::expect_error<ConfigError>([] { load("sparsity:\n  sparsity: 0.5\n  param_name_patterns: \"fc(1\"\n"); },
                                  {"'sparsity.param_name_patterns'", "regex 'fc(1' does not compile"});
  test::expect_error<ConfigError>([] { load("sparsity:\n  sparsity: 0.5\n  param_name_patterns: [fc1, \"[a-\"]\n"); },
                                  {"'sparsity.param_name_patterns[1]'", "does not compile"});
}

TEST(SparsityConfig, UnknownKeysAndTheOldFieldAreErrors) {
  test::expect_error<ConfigError>([] { load("sparsity:\n  level: 0.5\n"); }, {"unknown field 'sparsity.level'", "init_method"});
  test::expect_error<ConfigError>([] { load("weights: {sparsity: 0.5}\n"); }, {"'weights.sparsity' has moved", "'sparsity:' block"});
}

TEST(SparsityConfig, InitSwitchesLiveInTheMemoryXBlock) {
  RunConfig c = load("memoryx:\n  lazy_initialization: false\n  optimize_initialization: false\n  max_async_parallel_compute: 2\n"
                     "model:\n  layers: [784, 16, 10]\n  init:\n    weight: {kind: normal, std: 0.02}\n    bias: {kind: zeros}\n");
  EXPECT_FALSE(c.train.memoryx.init.lazy);
  EXPECT_FALSE(c.train.memoryx.init.optimize);
  EXPECT_EQ(c.train.memoryx.init.max_parallel, 2u);
  EXPECT_EQ(c.train.memoryx.weight_init.kind, "normal");
  EXPECT_EQ(c.train.memoryx.weight_init.b, 0.02);
  EXPECT_EQ(c.train.memoryx.bias_init.kind, "zeros");
  EXPECT_EQ(load("").train.memoryx.init.max_parallel, 4u);  // the documented default
  test::expect_error<ConfigError>([] { load("memoryx: {max_async_parallel_compute: 0}\n"); }, {"'memoryx.max_async_parallel_compute'"});
  test::expect_error<ConfigError>([] { load("model:\n  layers: [784, 10]\n  init: {weight: {kind: orthogonal}}\n"); },
                                  {"'model.init.weight.kind'", "unknown init 'orthogonal'"});
}

}  // namespace
}  // namespace wse
