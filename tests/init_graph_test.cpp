// The weight-initialization graph: bit-identical tensors in every mode, pruning of overwritten
// ops, eager vs lazy memory and timing of work, bounded parallel materialization, the
// distributions against their closed forms, and clear errors.
#include <gtest/gtest.h>

#include <atomic>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <latch>
#include <mutex>
#include <set>
#include <thread>

#include "memoryx/init_graph.hpp"

namespace wse {
namespace {

using Ops = std::vector<std::string>;

InitSettings settings(bool lazy, bool optimize = true, uint32_t max_parallel = 4) {
  return {lazy, optimize, max_parallel};
}

// Expects std::invalid_argument with a message containing every fragment.
template <class Fn>
void expect_invalid(Fn&& fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.name == b.name && a.shape == b.shape && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// A small model: tensors of different sizes (odd ones too, for Box-Muller's pairs) and op chains
// with pruned, read and overwritten ops, plus a checkpoint tensor.
std::vector<Tensor> build_model(uint64_t seed, InitSettings s, InitStats* stats = nullptr) {
  InitGraph g(seed, s);
  auto ckpt = std::make_shared<std::vector<float>>(300);
  for (size_t i = 0; i < ckpt->size(); ++i) (*ckpt)[i] = float(i) * 0.25f - 7.0f;

  const size_t w1 = g.add_tensor("fc1.weight", {64, 300}, 64, 300);
  g.normal(w1, 0, 1);
  g.kaiming_uniform(w1, std::sqrt(5.0));  // overwrites the normal
  const size_t b1 = g.add_tensor("fc1.bias", {300}, 64, 300);
  g.fill(b1, 3);
  g.copy_from(b1, ckpt);
  const size_t w2 = g.add_tensor("fc2.weight", {300, 17}, 300, 17);
  g.normal(w2, 1, 2);
  g.scale(w2, 0.5);
  g.xavier_normal(w2, 1.5);
  const size_t b2 = g.add_tensor("fc2.bias", {17}, 300, 17);
  g.uniform(b2, -1, 1);
  g.scale(b2, -3);
  const size_t emb = g.add_tensor("emb", {1001, 33}, 1001, 33);
  g.xavier_uniform(emb);
  g.kaiming_normal(emb, 0.1, FanMode::Out);
  g.scale(emb, 0.1);
  const size_t ids = g.add_tensor("ids", {7}, 1, 1);
  g.random_int(ids, -5, 9);
  const size_t scalar = g.add_tensor("scalar", {}, 1, 1);
  g.normal(scalar, 0, 1);
  g.zero(g.add_tensor("untouched_then_zero", {5, 5}, 5, 5));
  g.add_tensor("untouched", {3}, 3, 1);
  const size_t big = g.add_tensor("big", {65537}, 256, 256);
  g.uniform(big, 0, 1);
  g.normal(big, 0, 0.02);
  g.scale(big, 2);
  g.uniform(big, -0.1, 0.1);
  g.scale(big, 3);

  auto out = g.materialize();
  if (stats) *stats = g.stats();
  return out;
}

TEST(InitGraph, SameSeedGivesBitIdenticalTensorsInEveryMode) {
  const auto reference = build_model(42, settings(false, false, 1));
  ASSERT_EQ(reference.size(), 10u);
  for (bool lazy : {false, true})
    for (bool optimize : {false, true})
      for (uint32_t par : {1u, 2u, 3u, 4u, 8u}) {
        const auto got = build_model(42, settings(lazy, optimize, par));
        ASSERT_EQ(got.size(), reference.size());
        for (size_t t = 0; t < got.size(); ++t)
          EXPECT_TRUE(bit_identical(got[t], reference[t]))
              << reference[t].name << " lazy=" << lazy << " optimize=" << optimize << " max_parallel=" << par;
      }
}

TEST(InitGraph, TensorsComeBackInAddOrderWithTheirShapes) {
  InitStats st;
  const auto out = build_model(42, settings(true), &st);
  EXPECT_EQ(out[0].name, "fc1.weight");
  EXPECT_EQ(out[0].shape, (std::vector<uint32_t>{64, 300}));
  EXPECT_EQ(out[0].size(), 64u * 300u);
  EXPECT_EQ(out[6].name, "scalar");
  EXPECT_EQ(out[6].size(), 1u);  // a 0-d tensor holds one value
  EXPECT_EQ(out[9].name, "big");
  for (float v : out[8].data) EXPECT_EQ(v, 0.0f);  // no op: zeros
  uint64_t bytes = 0;
  for (const auto& t : out) bytes += t.size() * sizeof(float);
  EXPECT_EQ(st.store_bytes, bytes);
  EXPECT_EQ(st.tensors, 10u);
}

TEST(InitGraph, DifferentSeedsGiveDifferentTensors) {
  const auto a = build_model(1, settings(true)), b = build_model(2, settings(true));
  EXPECT_NE(a[0].data, b[0].data);
  EXPECT_NE(a[9].data, b[9].data);
  EXPECT_EQ(a[1].data, b[1].data);  // copied from the checkpoint: no randomness
}

// A pruned op still takes its seed at record time: dropping it would shift every later op's draw.
TEST(InitGraph, PrunedOpsStillDrawTheirSeedInRecordOrder) {
  auto second_tensor = [](bool with_normal, InitSettings s) {
    InitGraph g(7, s);
    const size_t a = g.add_tensor("a", {100}, 10, 10), b = g.add_tensor("b", {100}, 10, 10);
    if (with_normal) g.normal(a, 0, 1);
    g.uniform(a, 0, 1);
    g.uniform(b, 0, 1);
    return g.materialize()[1].data;
  };
  const auto lazy = second_tensor(true, settings(true)), eager = second_tensor(true, settings(false));
  EXPECT_EQ(lazy, eager);
  EXPECT_NE(lazy, second_tensor(false, settings(true)));
}

// Element i depends only on (op seed, i): a bigger tensor starts with the smaller one's values.
TEST(InitGraph, ElementsAreAFunctionOfOpSeedAndIndexOnly) {
  for (int kind = 0; kind < 3; ++kind) {
    auto values = [kind](uint32_t n) {
      InitGraph g(99, settings(true));
      const size_t t = g.add_tensor("w", {n}, 8, 8);
      if (kind == 0) g.uniform(t, -2, 2);
      if (kind == 1) g.normal(t, 1, 3);
      if (kind == 2) g.random_int(t, 0, 1000);
      return g.materialize()[0].data;
    };
    const auto small = values(11), large = values(5000);
    EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin())) << "kind " << kind;
  }
}

struct Pruned {
  Ops planned;
  InitStats stats;
  std::vector<float> data;
};

// One tensor of 1000 elements with the given chain; records ops via a callback.
template <class Chain>
Pruned run_chain(InitSettings s, Chain chain) {
  InitGraph g(5, s);
  const size_t t = g.add_tensor("w", {10, 100}, 10, 100);
  chain(g, t);
  Pruned r{g.planned_ops(t)};
  r.data = g.materialize()[0].data;
  r.stats = g.stats();
  return r;
}

TEST(InitGraph, PruningDropsOpsOverwrittenBeforeTheyAreRead) {
  auto ckpt = std::make_shared<std::vector<float>>(1000, 0.5f);
  struct Case {
    const char* what;
    std::function<void(InitGraph&, size_t)> chain;
    Ops planned;
    uint64_t recorded, pruned;
  };
  const std::vector<Case> cases = {
      {"normal, uniform", [](InitGraph& g, size_t t) { g.normal(t, 0, 1), g.uniform(t, 0, 1); }, {"uniform"}, 2, 1},
      {"normal, scale, uniform",
       [](InitGraph& g, size_t t) { g.normal(t, 0, 1), g.scale(t, 2), g.uniform(t, 0, 1); }, {"uniform"}, 3, 2},
      {"uniform, scale", [](InitGraph& g, size_t t) { g.uniform(t, 0, 1), g.scale(t, 2); }, {"uniform", "scale"}, 2, 0},
      {"fill, copy_from", [&](InitGraph& g, size_t t) { g.fill(t, 1), g.copy_from(t, ckpt); }, {"copy_from"}, 2, 1},
      {"scale, zero, kaiming_uniform, scale, xavier_normal, scale",
       [](InitGraph& g, size_t t) {
         g.scale(t, 2), g.zero(t), g.kaiming_uniform(t), g.scale(t, 3), g.xavier_normal(t), g.scale(t, 4);
       },
       {"xavier_normal", "scale"}, 6, 4},
      {"random_int, kaiming_normal, xavier_uniform, fill",
       [](InitGraph& g, size_t t) { g.random_int(t, 0, 3), g.kaiming_normal(t), g.xavier_uniform(t), g.fill(t, 1); },
       {"fill"}, 4, 3},
  };
  for (const Case& c : cases) {
    const Pruned on = run_chain(settings(true, true), c.chain);
    EXPECT_EQ(on.planned, c.planned) << c.what;
    EXPECT_EQ(on.stats.ops_recorded, c.recorded) << c.what;
    EXPECT_EQ(on.stats.ops_pruned, c.pruned) << c.what;
    EXPECT_EQ(on.stats.ops_executed, c.recorded - c.pruned) << c.what;
    // optimize off and eager: nothing pruned, every op runs, same bits.
    for (InitSettings s : {settings(true, false), settings(false, true), settings(false, false)}) {
      const Pruned all = run_chain(s, c.chain);
      EXPECT_EQ(all.planned.size(), c.recorded) << c.what;
      EXPECT_EQ(all.stats.ops_pruned, 0u) << c.what;
      EXPECT_EQ(all.stats.ops_executed, c.recorded) << c.what;
      EXPECT_EQ(std::memcmp(all.data.data(), on.data.data(), on.data.size() * sizeof(float)), 0) << c.what;
    }
  }
}

TEST(InitGraph, PruningCountsAcrossTheModel) {
  // Recorded: 2 + 2 + 3 + 2 + 3 + 1 + 1 + 1 + 0 + 5. Pruned by hand: fc1.weight normal; fc1.bias
  // fill; fc2.weight normal, scale; emb xavier_uniform; big uniform, normal, scale.
  InitStats on, off, eager;
  build_model(3, settings(true, true), &on);
  build_model(3, settings(true, false), &off);
  build_model(3, settings(false, true), &eager);
  EXPECT_EQ(on.ops_recorded, 20u);
  EXPECT_EQ(on.ops_pruned, 8u);
  EXPECT_EQ(on.ops_executed, 12u);
  EXPECT_EQ(off.ops_pruned, 0u);
  EXPECT_EQ(off.ops_executed, 20u);
  EXPECT_EQ(eager.ops_pruned, 0u);
  EXPECT_EQ(eager.ops_executed, 20u);
}

TEST(InitGraph, EagerRunsOpsAtRecordTimeIntoAHostTensor) {
  InitGraph g(1, settings(false));
  const size_t a = g.add_tensor("a", {1000}, 10, 100);
  EXPECT_EQ(g.stats().host_bytes, 4000u);  // the CPU model exists from add_tensor on
  g.normal(a, 0, 1);
  EXPECT_EQ(g.stats().ops_executed, 1u);
  g.uniform(a, 0, 1);
  EXPECT_EQ(g.stats().ops_executed, 2u);
  EXPECT_EQ(g.planned_ops(a), (Ops{"normal", "uniform"}));  // already ran: nothing to prune
  const size_t b = g.add_tensor("b", {1 << 20}, 1024, 1024);
  g.kaiming_normal(b);
  EXPECT_EQ(g.stats().ops_executed, 3u);
  EXPECT_EQ(g.stats().host_bytes, 4000u + (4u << 20));
  EXPECT_GT(g.stats().record_seconds, 0.0);

  const auto out = g.materialize();
  const InitStats& st = g.stats();
  EXPECT_EQ(st.ops_executed, 3u);
  EXPECT_EQ(st.host_bytes, 0u);                   // freed once the transfer ended
  EXPECT_EQ(st.store_bytes, 4000u + (4u << 20));
  EXPECT_EQ(st.peak_bytes, 2 * st.store_bytes);   // host and store copies coexist
  EXPECT_EQ(st.max_in_flight, 1u);
}

TEST(InitGraph, LazyRunsNothingAndAllocatesNothingUntilMaterialize) {
  InitGraph g(1, settings(true));
  const size_t a = g.add_tensor("a", {1000}, 10, 100);
  g.normal(a, 0, 1);
  g.uniform(a, 0, 1);
  const size_t b = g.add_tensor("b", {1 << 20}, 1024, 1024);
  g.kaiming_normal(b);
  EXPECT_EQ(g.stats().ops_recorded, 3u);
  EXPECT_EQ(g.stats().ops_executed, 0u);
  EXPECT_EQ(g.stats().ops_pruned, 1u);
  EXPECT_EQ(g.stats().host_bytes, 0u);
  EXPECT_EQ(g.stats().peak_bytes, 0u);
  EXPECT_EQ(g.planned_ops(a), Ops{"uniform"});

  const auto out = g.materialize();
  const InitStats& st = g.stats();
  EXPECT_EQ(st.ops_executed, 2u);
  EXPECT_EQ(st.store_bytes, 4000u + (4u << 20));
  EXPECT_EQ(st.peak_bytes, st.store_bytes);  // half of eager's
  EXPECT_GT(st.materialize_seconds, 0.0);
}

TEST(InitGraph, AtMostMaxParallelTensorsMaterializeAtOnce) {
  for (uint32_t par : {1u, 2u, 4u}) {
    InitGraph g(11, settings(true, true, par));
    for (int k = 0; k < 16; ++k) g.uniform(g.add_tensor("w" + std::to_string(k), {1u << 20}, 1024, 1024), -1, 1);
    std::mutex mu;
    std::set<std::thread::id> threads;
    g.on_task_start([&](size_t) {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    });
    const auto out = g.materialize();
    EXPECT_EQ(out.size(), 16u);
    EXPECT_GE(g.stats().max_in_flight, 1u);
    EXPECT_LE(g.stats().max_in_flight, par);
    EXPECT_LE(threads.size(), par);
    if (par == 1) {
      EXPECT_EQ(*threads.begin(), std::this_thread::get_id());  // inline on the caller
    }
  }
}

// Deterministic overlap: the first max_parallel tasks wait for each other, so they are all in
// flight together; they can only meet if they run on max_parallel different workers.
TEST(InitGraph, MaxParallelTasksReallyRunTogether) {
  for (uint32_t par : {2u, 4u}) {
    InitGraph g(11, settings(true, true, par));
    for (int k = 0; k < 16; ++k) g.normal(g.add_tensor("w" + std::to_string(k), {1u << 16}, 256, 256), 0, 1);
    std::latch together(par);
    g.on_task_start([&](size_t t) {
      if (t < par) together.arrive_and_wait();
    });
    g.materialize();
    EXPECT_EQ(g.stats().max_in_flight, par);
  }
}

TEST(InitGraph, ATaskErrorReachesTheCaller) {
  InitGraph g(1, settings(true, true, 3));
  for (int k = 0; k < 8; ++k) g.zero(g.add_tensor("w" + std::to_string(k), {100}, 1, 1));
  g.on_task_start([](size_t t) {
    if (t == 5) throw std::runtime_error("task 5 failed");
  });
  EXPECT_THROW(g.materialize(), std::runtime_error);
}

// Distributions against their closed forms, within 5 standard errors.
struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};
Moments moments(const std::vector<float>& x) {
  Moments m;
  for (float v : x) m.mean += v, m.min = std::min<double>(m.min, v), m.max = std::max<double>(m.max, v);
  m.mean /= double(x.size());
  for (float v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var /= double(x.size());
  return m;
}

std::vector<float> one(uint32_t n, uint32_t fan_in, uint32_t fan_out, const std::function<void(InitGraph&, size_t)>& op) {
  InitGraph g(2024, settings(true));
  const size_t t = g.add_tensor("w", {n}, fan_in, fan_out);
  op(g, t);
  return g.materialize()[0].data;
}

void expect_uniform(const std::vector<float>& x, double lo, double hi, const char* what) {
  const Moments m = moments(x);
  const double n = double(x.size()), w = hi - lo;
  EXPECT_GE(m.min, float(lo)) << what;
  EXPECT_LT(m.max, float(hi)) << what;
  EXPECT_NEAR(m.mean, (lo + hi) / 2, 5 * w / std::sqrt(12 * n)) << what;
  EXPECT_NEAR(m.var, w * w / 12, 5 * w * w * std::sqrt((1.0 / 80 - 1.0 / 144) / n)) << what;
}

void expect_normal(const std::vector<float>& x, double mean, double std, const char* what) {
  const Moments m = moments(x);
  const double n = double(x.size());
  EXPECT_NEAR(m.mean, mean, 5 * std / std::sqrt(n)) << what;
  EXPECT_NEAR(std::sqrt(m.var), std, 5 * std / std::sqrt(2 * n)) << what;
}

constexpr uint32_t kN = 200000;

TEST(InitGraph, UniformAndNormalMatchTheirMoments) {
  expect_uniform(one(kN, 1, 1, [](InitGraph& g, size_t t) { g.uniform(t, -3, 5); }), -3, 5, "uniform");
  expect_normal(one(kN, 1, 1, [](InitGraph& g, size_t t) { g.normal(t, 2, 0.5); }), 2, 0.5, "normal");
  expect_normal(one(kN + 1, 1, 1, [](InitGraph& g, size_t t) { g.normal(t, -1, 3); }), -1, 3, "normal, odd size");
  for (float v : one(100, 1, 1, [](InitGraph& g, size_t t) { g.normal(t, 4, 0); })) EXPECT_EQ(v, 4.0f);
  for (float v : one(100, 1, 1, [](InitGraph& g, size_t t) { g.uniform(t, 2, 2); })) EXPECT_EQ(v, 2.0f);
  // hi one float step above lo: every draw rounds to lo or hi, and hi is excluded.
  const double next = std::nextafter(1.0f, 2.0f);
  for (float v : one(10000, 1, 1, [&](InitGraph& g, size_t t) { g.uniform(t, 1.0, next); })) ASSERT_EQ(v, 1.0f);
}

TEST(InitGraph, KaimingMatchesPyTorch) {
  // nn.Linear's default, kaiming_uniform(a = sqrt(5)): bound = 1/sqrt(fan_in).
  const auto lin = one(kN, 256, 64, [](InitGraph& g, size_t t) { g.kaiming_uniform(t, std::sqrt(5.0)); });
  const Moments m = moments(lin);
  const float bound = 1.0f / 16;
  EXPECT_LE(std::max(-m.min, m.max), bound);
  EXPECT_GT(std::max(-m.min, m.max), 0.99 * bound);
  expect_uniform(lin, -1.0 / 16, 1.0 / 16, "kaiming_uniform a=sqrt(5)");
  // a = 0, fan_out: bound = sqrt(6 / fan_out).
  expect_uniform(one(kN, 256, 24, [](InitGraph& g, size_t t) { g.kaiming_uniform(t, 0, FanMode::Out); }),
                 -0.5, 0.5, "kaiming_uniform fan_out");
  // std = gain / sqrt(fan) = sqrt(2 / ((1 + a^2) fan)).
  expect_normal(one(kN, 200, 10, [](InitGraph& g, size_t t) { g.kaiming_normal(t); }), 0, 0.1, "kaiming_normal");
  expect_normal(one(kN, 200, 100, [](InitGraph& g, size_t t) { g.kaiming_normal(t, 1, FanMode::Out); }), 0, 0.1,
                "kaiming_normal a=1 fan_out");
}

TEST(InitGraph, XavierMatchesPyTorch) {
  // bound = gain * sqrt(6 / (fan_in + fan_out)) = 2 * sqrt(6 / 600) = 0.2
  const auto u = one(kN, 400, 200, [](InitGraph& g, size_t t) { g.xavier_uniform(t, 2); });
  expect_uniform(u, -0.2, 0.2, "xavier_uniform");
  EXPECT_GT(moments(u).max, 0.99 * 0.2);
  // std = gain * sqrt(2 / (fan_in + fan_out)) = sqrt(2 / 800) = 0.05
  expect_normal(one(kN, 300, 500, [](InitGraph& g, size_t t) { g.xavier_normal(t); }), 0, 0.05, "xavier_normal");
}

TEST(InitGraph, RandomIntHitsEveryIntegerInRange) {
  const auto x = one(10000, 1, 1, [](InitGraph& g, size_t t) { g.random_int(t, -3, 5); });
  std::set<float> seen;
  for (float v : x) {
    ASSERT_EQ(v, std::floor(v));
    ASSERT_GE(v, -3.0f);
    ASSERT_LT(v, 5.0f);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 8u);
  // Uniform on 0..999: the mean of U(-0.5, 999.5), and its variance less 1/12 (well inside the tolerance).
  expect_uniform(one(kN, 1, 1, [](InitGraph& g, size_t t) { g.random_int(t, 0, 1000); }), -0.5, 999.5,
                 "random_int [0, 1000)");
}

TEST(InitGraph, FillZeroScaleAndCopyAreExact) {
  for (float v : one(1000, 1, 1, [](InitGraph& g, size_t t) { g.fill(t, -2.75f); })) ASSERT_EQ(v, -2.75f);
  for (float v : one(1000, 1, 1, [](InitGraph& g, size_t t) { g.fill(t, 9), g.zero(t); })) ASSERT_EQ(v, 0.0f);
  for (float v : one(1000, 1, 1, [](InitGraph& g, size_t t) { g.fill(t, 1.5f), g.scale(t, 3); })) ASSERT_EQ(v, 4.5f);
  const auto plain = one(1000, 1, 1, [](InitGraph& g, size_t t) { g.normal(t, 0, 1); });
  const auto scaled = one(1000, 1, 1, [](InitGraph& g, size_t t) { g.normal(t, 0, 1), g.scale(t, 0.1); });
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(scaled[i], float(double(plain[i]) * 0.1));
  auto src = std::make_shared<std::vector<float>>(1000);
  for (size_t i = 0; i < src->size(); ++i) (*src)[i] = std::sin(float(i));
  EXPECT_EQ(one(1000, 1, 1, [&](InitGraph& g, size_t t) { g.uniform(t, 0, 1), g.copy_from(t, src); }), *src);
}

TEST(InitGraph, LoadFromFillsTheTensorWhenItsTaskRunsAndPrunesWhatCameBefore) {
  for (bool lazy : {true, false}) {
    InitGraph g(1, settings(lazy, true, 2));
    std::atomic<int> reads{0};
    size_t ids[3];
    for (size_t k = 0; k < 3; ++k) {
      ids[k] = g.add_tensor("t" + std::to_string(k), {100}, 10, 10);
      g.normal(ids[k], 0, 1);
      g.load_from(ids[k], [&reads, k](float* out, size_t n) {
        ++reads;
        for (size_t i = 0; i < n; ++i) out[i] = float(k * 1000 + i);
      });
    }
    // Lazy: nothing read until materialize, and the normal before each load is pruned.
    EXPECT_EQ(reads.load(), lazy ? 0 : 3);
    EXPECT_EQ(g.stats().ops_pruned, lazy ? 3u : 0u);
    const auto out = g.materialize();
    EXPECT_EQ(reads.load(), 3);
    for (size_t k = 0; k < 3; ++k)
      for (size_t i = 0; i < 100; ++i) ASSERT_EQ(out[k].data[i], float(k * 1000 + i)) << (lazy ? "lazy " : "eager ") << k;
  }
  InitGraph g(1, settings(true));
  expect_invalid([&] { g.load_from(g.add_tensor("w", {2}, 1, 1), nullptr); }, {"'w'", "load_from", "no reader"});
}

TEST(InitGraph, BadInputsGiveClearErrors) {
  expect_invalid([] { InitGraph(1, settings(true, true, 0)); }, {"max_parallel", ">= 1"});
  InitGraph g(1, settings(true));
  const size_t w = g.add_tensor("fc1.weight", {4, 3}, 0, 0);
  expect_invalid([&] { g.normal(7, 0, 1); }, {"normal", "unknown tensor id 7"});
  expect_invalid([&] { g.planned_ops(7); }, {"unknown tensor id 7"});
  expect_invalid([&] { g.copy_from(w, std::make_shared<std::vector<float>>(10)); },
                 {"fc1.weight", "copy_from", "10 values", "expected 12"});
  expect_invalid([&] { g.copy_from(w, nullptr); }, {"fc1.weight", "null"});
  expect_invalid([&] { g.uniform(w, 2, 1); }, {"fc1.weight", "uniform", "lo <= hi"});
  expect_invalid([&] { g.random_int(w, 3, 3); }, {"fc1.weight", "random_int", "lo < hi"});
  expect_invalid([&] { g.normal(w, 0, -1); }, {"fc1.weight", "normal", "std >= 0"});
  expect_invalid([&] { g.kaiming_uniform(w); }, {"fc1.weight", "kaiming_uniform", "fan_in > 0"});
  expect_invalid([&] { g.kaiming_normal(w, 0, FanMode::Out); }, {"fc1.weight", "kaiming_normal", "fan_out > 0"});
  expect_invalid([&] { g.xavier_uniform(w); }, {"fc1.weight", "xavier_uniform", "fan_in + fan_out > 0"});
  expect_invalid([&] { g.xavier_normal(w); }, {"fc1.weight", "xavier_normal", "fan_in + fan_out > 0"});
  const size_t b = g.add_tensor("fc1.bias", {3}, 4, 3);
  expect_invalid([&] { g.xavier_uniform(b, -1); }, {"fc1.bias", "gain >= 0"});
  EXPECT_EQ(g.stats().ops_recorded, 0u);  // rejected ops leave no trace
  g.materialize();
  expect_invalid([&] { g.materialize(); }, {"materialize() called twice"});
  expect_invalid([&] { g.fill(b, 1); }, {"fc1.bias", "after materialize"});
  expect_invalid([&] { g.add_tensor("late", {1}, 1, 1); }, {"late", "after materialize"});
}

// A rejected op draws no seed: the graph goes on as if it had never been called.
TEST(InitGraph, RejectedOpsDrawNoSeed) {
  auto values = [](bool with_bad) {
    InitGraph g(3, settings(true));
    const size_t t = g.add_tensor("w", {50}, 0, 0);
    if (with_bad) {
      EXPECT_THROW(g.uniform(t, 1, 0), std::invalid_argument);
      EXPECT_THROW(g.kaiming_uniform(t), std::invalid_argument);
    }
    g.normal(t, 0, 1);
    return g.materialize()[0].data;
  };
  EXPECT_EQ(values(true), values(false));
}

}  // namespace
}  // namespace wse
