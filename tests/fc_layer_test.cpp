// Weight-streaming FC training on the emulated wafer against an Eigen reference of the same
// network: loss, and every layer's dW (which also checks dX, since each layer's dZ comes from the
// dX of the layer above), dense and sparse, on shapes that do not divide the mesh evenly.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "host/dataset.hpp"
#include "host/config.hpp"
#include "scratch.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
};

Batch make_batch(uint32_t n, uint32_t features, uint32_t classes, uint32_t seed) {
  Batch b;
  for (uint32_t i = 0; i < n * features; ++i) b.x.push_back(float((i * 2654435761u + seed * 97) % 1000) / 1000.0f);
  for (uint32_t i = 0; i < n; ++i) b.y.push_back(uint8_t((i * 7 + seed) % classes));
  return b;
}

RunConfig fc_config(std::vector<uint32_t> layers, uint32_t mesh_w, uint32_t mesh_h, uint32_t batch, bool sparse, bool mixed = false) {
  RunConfig cfg;
  cfg.source = "in-memory";
  cfg.kernel = "fc_train";
  cfg.mesh = {mesh_w, mesh_h};
  cfg.train.layers = std::move(layers);
  cfg.train.batch_size = batch;
  cfg.train.memoryx.optimizer = {"sgd", 1.0f, 0.0f};
  cfg.train.memoryx.encoding = sparse ? StreamEncoding::Sparse : StreamEncoding::Dense;
  cfg.train.memoryx.sparsity.enabled = sparse;
  cfg.train.memoryx.sparsity.level = 0.5;
  cfg.train.memoryx.seed = 9;
  cfg.train.mixed = mixed;
  cfg.train.loss_scale = mixed ? 128.0f : 1.0f;
  if (mixed && !sparse) cfg.train.memoryx.encoding = StreamEncoding::DenseHalf;
  return cfg;
}

// Reference forward + backward in double precision with the weights the wafer sees (fp16-rounded
// when streamed sparse or in mixed precision; the inputs too in mixed precision). Returns mean
// loss and each layer's (in+1) x out gradient.
struct Reference {
  double loss = 0;
  std::vector<Mat> grads;
};

Reference reference(MemoryX& mx, const Batch& b, uint32_t batch, bool half_weights, bool half_inputs) {
  const size_t layers = mx.layers();
  std::vector<Mat> w(layers);
  for (size_t l = 0; l < layers; ++l) {
    const LayerSpec& s = mx.layer(l);
    w[l].resize(s.in + 1, s.out);
    for (uint32_t k = 0; k <= s.in; ++k)
      for (uint32_t n = 0; n < s.out; ++n) {
        float v = k < s.in ? mx.weight(l).data[size_t(k) * s.out + n] : mx.bias(l).data[n];
        w[l](k, n) = half_weights ? double(float(_Float16(v))) : double(v);
      }
  }
  auto ones = [](const Mat& a) {
    Mat out(a.rows(), a.cols() + 1);
    out << a, Mat::Ones(a.rows(), 1);
    return out;
  };
  std::vector<Mat> in(layers);  // each layer's input with the ones column
  Mat a = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(b.x.data(), batch, mx.layer(0).in).cast<double>();
  if (half_inputs) a = a.unaryExpr([](double v) { return double(float(_Float16(float(v)))); });
  for (size_t l = 0; l < layers; ++l) {
    in[l] = ones(a);
    Mat z = in[l] * w[l];
    a = l + 1 < layers ? Mat(z.cwiseMax(0.0)) : z;
  }
  Reference ref;
  Mat dz(a.rows(), a.cols());
  for (uint32_t i = 0; i < batch; ++i) {
    const double m = a.row(i).maxCoeff();
    const double lse = std::log((a.row(i).array() - m).exp().sum()) + m;
    ref.loss += lse - a(i, b.y[i]);
    for (Eigen::Index n = 0; n < a.cols(); ++n) dz(i, n) = (std::exp(a(i, n) - lse) - (n == b.y[i])) / batch;
  }
  ref.loss /= batch;
  ref.grads.resize(layers);
  for (size_t l = layers; l-- > 0;) {
    ref.grads[l] = in[l].transpose() * dz;
    if (l == 0) break;
    Mat dx = dz * w[l].topRows(w[l].rows() - 1).transpose();
    const Mat& act = in[l];  // relu output of layer l-1 (plus ones column)
    dz = dx.array() * (act.leftCols(act.cols() - 1).array() > 0.0).cast<double>();
  }
  return ref;
}

struct Case {
  std::vector<uint32_t> layers;
  uint32_t mesh_w, mesh_h, batch;
  bool sparse;
  bool mixed = false;
};

class FcVsEigen : public ::testing::TestWithParam<Case> {};

// Tolerances. fp32: the wafer sums in fp32 where the reference sums in double: 1e-5 of the loss,
// 1e-4 of the largest gradient. Mixed precision: activations and dZ are rounded to fp16 at every
// layer (relative error 2^-11 each; products and sums stay fp32), so a gradient carries about one
// such rounding per layer it passed plus its own dz and x: with at most 4 layers, 6 x 2^-11 ~ 3e-3
// of the largest gradient, and the loss (one rounding per layer of its logits) 2e-3 of itself.
TEST_P(FcVsEigen, LossAndGradientsMatchEigen) {
  const Case c = GetParam();
  RunConfig cfg = fc_config(c.layers, c.mesh_w, c.mesh_h, c.batch, c.sparse, c.mixed);
  Cluster t(cluster_config(cfg), 2);
  Batch b = make_batch(c.batch, c.layers.front(), c.layers.back(), 3);
  Reference ref = reference(t.memoryx(), b, c.batch, c.sparse || c.mixed, c.mixed);
  StepResult r = t.train_step(b.x.data(), b.y.data());
  const double loss_tol = c.mixed ? 2e-3 : 1e-5, grad_tol = c.mixed ? 3e-3 : 1e-4;
  EXPECT_NEAR(r.loss, ref.loss, loss_tol * std::max(1.0, ref.loss));
  for (size_t l = 0; l < ref.grads.size(); ++l) {
    const std::vector<float>& g = t.last_gradient(l);
    ASSERT_EQ(g.size(), size_t(ref.grads[l].size()));
    const double scale = std::max(1e-3, ref.grads[l].cwiseAbs().maxCoeff());
    const LayerSpec& s = t.memoryx().layer(l);
    const std::vector<uint8_t>& wmask = t.memoryx().param_mask(2 * l);
    const std::vector<uint8_t>& bmask = t.memoryx().param_mask(2 * l + 1);
    uint64_t pruned = 0;
    for (Eigen::Index k = 0; k < ref.grads[l].rows(); ++k)
      for (Eigen::Index n = 0; n < ref.grads[l].cols(); ++n) {
        const std::vector<uint8_t>& m = uint32_t(k) < s.in ? wmask : bmask;
        const size_t i = uint32_t(k) < s.in ? size_t(k) * s.out + size_t(n) : size_t(n);
        const float got = g[size_t(k * ref.grads[l].cols() + n)];
        if (!m.empty() && !m[i]) {  // pruned: never streamed, no gradient computed
          ASSERT_EQ(got, 0.0f) << "layer " << l << " pruned dW(" << k << "," << n << ")";
          ++pruned;
          continue;
        }
        // MemoryX got the gradient scaled by the loss scale; last_gradient is what it received.
        ASSERT_NEAR(got / cfg.train.loss_scale, ref.grads[l](k, n), grad_tol * scale) << "layer " << l << " dW(" << k << "," << n << ")";
      }
    if (c.sparse) {
      EXPECT_GT(pruned, 0u) << "layer " << l;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FcVsEigen,
                         ::testing::Values(Case{{13, 7, 5}, 3, 2, 6, false},       // uneven feature slices
                                           Case{{20, 9, 11, 4}, 4, 3, 10, false},  // uneven batch rows (4,3,3)
                                           Case{{6, 3}, 5, 1, 3, false},           // more columns than outputs
                                           Case{{16, 8, 4}, 1, 1, 2, false},       // one PE
                                           Case{{13, 7, 5}, 3, 2, 6, true},        // sparse value+index
                                           Case{{20, 9, 11, 4}, 4, 3, 10, true},
                                           Case{{13, 7, 5}, 3, 2, 6, false, true},  // mixed precision, fp16 pairs
                                           Case{{20, 9, 11, 4}, 4, 3, 10, false, true},
                                           Case{{20, 9, 11, 4}, 4, 3, 10, true, true},  // mixed and sparse
                                           Case{{16, 8, 4}, 1, 1, 2, false, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name;
                           for (uint32_t f : info.param.layers) name += std::to_string(f) + "_";
                           return name + "mesh" + std::to_string(info.param.mesh_w) + "x" + std::to_string(info.param.mesh_h) + "_batch" +
                                  std::to_string(info.param.batch) + (info.param.sparse ? "_sparse" : "_dense") +
                                  (info.param.mixed ? "_mixed" : "");
                         });

TEST(FcTraining, SparseWeightsSkipWorkAndWavelets) {
  Batch b = make_batch(8, 40, 6, 1);
  RunConfig dense = fc_config({40, 24, 6}, 4, 2, 8, false);
  RunConfig sparse = fc_config({40, 24, 6}, 4, 2, 8, true);
  sparse.train.memoryx.sparsity.level = 0.75;
  Cluster td(cluster_config(dense), 1), ts(cluster_config(sparse), 1);
  td.train_step(b.x.data(), b.y.data());
  ts.train_step(b.x.data(), b.y.data());
  const PassStats fd = td.forward_stats()[0], fs = ts.forward_stats()[0];
  // 40 x 24 weights, 720 pruned: the bias row (24) stays dense. Each skipped weight saves an
  // AXPY over every batch row of the wafer (8).
  EXPECT_EQ(fd.macs, uint64_t(41) * 24 * 8);
  EXPECT_EQ(fs.macs_skipped, uint64_t(720) * 8);
  EXPECT_EQ(fs.macs, fd.macs - fs.macs_skipped);
  EXPECT_EQ(fd.wavelets_streamed - fs.wavelets_streamed, 720u);
  EXPECT_LT(fs.cycles, fd.cycles);
}

// Sparsity 0.9 (topk, weights and biases) in mixed precision: in every layer and pass, MACs,
// weights streamed and gradients leaving the wafer are at most 0.1 of dense plus rounding, and a
// wafer takes at most a quarter of the dense step's cycles.
TEST(FcTraining, SparsityTakesWorkAndCyclesOutOfBothPasses) {
  Batch b = make_batch(32, 200, 10, 4);
  RunConfig dense = fc_config({200, 96, 10}, 8, 4, 32, false, true);
  RunConfig sparse = fc_config({200, 96, 10}, 8, 4, 32, true, true);
  sparse.train.memoryx.sparsity.level = 0.9;
  sparse.train.memoryx.sparsity.method = SparsityInit::TopK;
  sparse.train.memoryx.sparsity.patterns = std::vector<SparsityPattern>{{".*", std::regex(".*"), {}, {}, {}}};
  Cluster td(cluster_config(dense), 2), ts(cluster_config(sparse), 2);
  const StepResult rd = td.train_step(b.x.data(), b.y.data());
  const StepResult rs = ts.train_step(b.x.data(), b.y.data());
  for (size_t l = 0; l < 2; ++l) {
    const uint64_t numel = uint64_t(dense.train.layers[l] + 1) * dense.train.layers[l + 1];
    for (bool bwd : {false, true}) {
      const PassStats d = bwd ? td.backward_stats()[l] : td.forward_stats()[l];
      const PassStats s = bwd ? ts.backward_stats()[l] : ts.forward_stats()[l];
      const std::string what = "layer " + std::to_string(l) + (bwd ? " bwd" : " fwd");
      EXPECT_EQ(d.weights_streamed, numel) << what;
      // round(0.9 n) pruned per parameter: at most one kept weight of rounding per parameter.
      EXPECT_LE(s.weights_streamed, numel / 10 + 2) << what;
      EXPECT_LE(double(s.macs), 0.1 * double(d.macs) + 2.0 * 32 * 2) << what;
      EXPECT_EQ(s.macs + s.macs_skipped, d.macs) << what;
      if (bwd) {
        EXPECT_EQ(d.gradient_wavelets, numel) << what;
        EXPECT_EQ(s.gradient_wavelets, s.weights_streamed) << what;  // only the mask's positions leave
      }
    }
  }
  // The wafer's own cycles (every layer and pass) shrink with the work; the step as a whole also
  // carries the cluster's fixed latencies (MemoryX, SwarmX, input), which sparsity does not remove.
  uint64_t wd = 0, ws = 0;
  for (size_t l = 0; l < 2; ++l) {
    wd += td.forward_stats()[l].cycles + td.backward_stats()[l].cycles;
    ws += ts.forward_stats()[l].cycles + ts.backward_stats()[l].cycles;
  }
  EXPECT_LE(double(ws), 0.25 * double(wd)) << ws << " vs dense " << wd;
  EXPECT_LT(rs.cycles, rd.cycles);
}

// The loss task's softmax and dZ, C++ that is no single builtin, is charged as 4 elementwise
// passes over its n_out x br values (max, exp and sum, log, dZ: fc_programs.cpp), at
// move_simd_fp32 a cycle. On one PE, the last layer's forward pass then takes 2 x n_out x br
// cycles more at width 1 than at width 2 (ceil(4nb / 2) against 4nb), and nothing else in that
// pass moves with the width. A mutation to 3 passes went unseen (the pass hides behind its stream
// in the example).
TEST(FcTraining, TheLossTaskIsChargedFourElementwisePasses) {
  const uint32_t n_out = 10, br = 4;
  const Batch b = make_batch(br, 24, n_out, 2);
  auto last_forward = [&](uint32_t width) {
    ClusterConfig c = cluster_config(fc_config({24, n_out}, 1, 1, br, false));
    c.machine.move_simd_fp32 = width;
    Cluster t(c, 1);
    t.train_step(b.x.data(), b.y.data());
    return t.forward_stats().back().cycles;
  };
  EXPECT_EQ(last_forward(1) - last_forward(2), 2u * n_out * br);
}

// A pass's cycles split into its stream phase (stream-bound, then compute-bound: from its first
// weight's earliest entry to its last weight's entry) and its tail (what follows the last
// weight): the three add up to the pass's cycles, in every layer and pass, dense and sparse
// (the split users read in report.json and the study; a tail one cycle long per run went unseen).
TEST(FcTraining, APassesStreamPhaseAndTailAddUpToItsCycles) {
  const Batch b = make_batch(32, 200, 10, 4);
  for (bool sparse : {false, true}) {
    Cluster t(cluster_config(fc_config({200, 96, 10}, 8, 4, 32, sparse, true)), 1);
    t.train_step(b.x.data(), b.y.data());
    t.train_step(b.x.data(), b.y.data());
    for (size_t l = 0; l < 2; ++l)
      for (bool bwd : {false, true}) {
        const PassStats p = bwd ? t.backward_stats()[l] : t.forward_stats()[l];
        EXPECT_EQ(p.runs, 2u);
        EXPECT_GT(p.tail_cycles, 0u);
        EXPECT_EQ(p.stream_bound_cycles + p.compute_bound_cycles + p.tail_cycles, p.cycles)
            << (sparse ? "sparse" : "dense") << " layer " << l << (bwd ? " bwd" : " fwd");
      }
  }
}

TEST(FcTraining, FourWafersGiveTheSameStepAsOne) {
  Batch b = make_batch(16, 30, 5, 2);
  RunConfig one = fc_config({30, 12, 5}, 3, 2, 16, false);
  RunConfig four = one;
  four.train.num_csx = 4;
  Cluster t1(cluster_config(one), 1), t4(cluster_config(four), 1), t4b(cluster_config(four), 2);
  t1.train_step(b.x.data(), b.y.data());
  t4.train_step(b.x.data(), b.y.data());
  t4b.train_step(b.x.data(), b.y.data());
  for (size_t l = 0; l < 2; ++l) {
    const auto &w1 = t1.memoryx().weight(l).data, &w4 = t4.memoryx().weight(l).data, &w4b = t4b.memoryx().weight(l).data;
    for (size_t i = 0; i < w1.size(); ++i) ASSERT_NEAR(w4[i], w1[i], 1e-6) << "layer " << l << " weight " << i;
    EXPECT_EQ(0, std::memcmp(w4.data(), w4b.data(), w4.size() * 4)) << "4 wafers: 1 vs 2 threads";
    EXPECT_EQ(t4.last_gradient(l), t4b.last_gradient(l));
  }
  EXPECT_EQ(t4.swarmx_levels(), 1u);
}

// Found by a mutation test: a SwarmX node adding its children's gradients in another order passed
// every test (four wafers against one are compared to 1e-6; SwarmX::reduce, which its own test
// checks, is not what the cluster runs). The reference: each wafer's shard run alone on a
// one-wafer cluster (its dZ divided by a quarter of the batch, exactly 4x the four-wafer run's),
// scaled by 1/4 (exact) and added in child order. Four wafers under one node (fanout 4) is where
// the order shows: with two, a + b is b + a.
TEST(FcTraining, TheTreeAddsTheWafersGradientsInChildOrder) {
  const uint32_t wafers = 4, shard = 4, features = 30, classes = 5;
  Batch b = make_batch(wafers * shard, features, classes, 2);
  RunConfig four = fc_config({features, 12, classes}, 3, 2, wafers * shard, false);
  four.train.num_csx = wafers;
  Cluster t4(cluster_config(four), 1);
  t4.train_step(b.x.data(), b.y.data());
  ASSERT_EQ(t4.swarmx_levels(), 1u);
  std::vector<std::vector<std::vector<float>>> alone(wafers);  // [wafer][layer]
  for (uint32_t w = 0; w < wafers; ++w) {
    Cluster one(cluster_config(fc_config({features, 12, classes}, 3, 2, shard, false)), 1);
    one.train_step(b.x.data() + size_t(w) * shard * features, b.y.data() + size_t(w) * shard);
    for (size_t l = 0; l < 2; ++l) alone[w].push_back(one.last_gradient(l));
  }
  for (size_t l = 0; l < 2; ++l) {
    std::vector<float> sum(alone[0][l].size());
    for (size_t k = 0; k < sum.size(); ++k) {
      float s = alone[0][l][k] * 0.25f;
      for (uint32_t w = 1; w < wafers; ++w) s += alone[w][l][k] * 0.25f;
      sum[k] = s;
    }
    const std::vector<float>& got = t4.last_gradient(l);
    ASSERT_EQ(got.size(), sum.size());
    size_t differ = 0;
    for (size_t k = 0; k < sum.size(); ++k) differ += std::memcmp(&got[k], &sum[k], 4) != 0;
    EXPECT_EQ(differ, 0u) << "layer " << l << ": " << differ << " of " << sum.size() << " values differ in their bits";
  }
}

// With the thread count left to the engine, each pass picks its workers by what it measured
// (wafer/worker_tuner.hpp): a pass's first run on the wafer's two workers, its second on one,
// then the faster. Whatever it picks, and whatever the host's timings, every step's weights and
// gradients are bit for bit those of a one-worker run.
TEST(FcTraining, PassesThatPickTheirWorkersByMeasurementGiveTheBitsOfOneWorker) {
  RunConfig cfg = fc_config({30, 12, 5}, 4, 4, 16, false, true);
  ClusterConfig adaptive = cluster_config(cfg);
  adaptive.adaptive_workers = true;
  Cluster one(cluster_config(cfg), 1), picked(adaptive, 2);
  ASSERT_EQ(one.worker_tuner(), nullptr);  // a count given is a count kept
  ASSERT_NE(picked.worker_tuner(), nullptr);
  EXPECT_EQ(picked.worker_tuner()->most(), 2u);
  for (uint64_t step = 0; step < 4; ++step) {
    Batch b = make_batch(16, 30, 5, uint32_t(step + 1));
    const StepResult r1 = one.train_step(b.x.data(), b.y.data());
    const StepResult r2 = picked.train_step(b.x.data(), b.y.data());
    EXPECT_EQ(r1.loss, r2.loss) << "step " << step;
    EXPECT_EQ(r1.cycles, r2.cycles) << "step " << step;
    for (size_t l = 0; l < 2; ++l) {
      const auto &w1 = one.memoryx().weight(l).data, &w2 = picked.memoryx().weight(l).data;
      ASSERT_EQ(0, std::memcmp(w1.data(), w2.data(), w1.size() * 4)) << "step " << step << " layer " << l;
      EXPECT_EQ(one.last_gradient(l), picked.last_gradient(l)) << "step " << step << " layer " << l;
    }
  }
  // Every kind of pass ran four times, its first on two workers. The first two kinds of the
  // second step ran on one (WorkerTuner::kMinKinds: nothing measured on both enough before
  // them); the others did too unless those two found two workers clearly faster
  // (WorkerTuner::kClear), which depends on this host's timings.
  const auto& kinds = picked.worker_tuner()->kinds();
  for (const char* kind : {"the input of a batch", "fc1 forward", "fc2 forward", "fc2 backward", "fc1 backward"}) {
    ASSERT_TRUE(kinds.count(kind)) << kind;
    const WorkerTuner::Kind& k = kinds.at(kind);
    EXPECT_GE(k.runs[1], 1u) << kind;
    EXPECT_EQ(k.total(), 4u) << kind;
  }
  EXPECT_GE(kinds.at("the input of a batch").runs[0], 1u);
  EXPECT_GE(kinds.at("fc1 forward").runs[0], 1u);
}

TEST(FcTraining, ACheckpointRestoresTrainingBitExactly) {
  RunConfig cfg = fc_config({24, 10, 4}, 3, 2, 8, false);
  cfg.train.memoryx.optimizer = {"adam", 0.01f};
  Batch b1 = make_batch(8, 24, 4, 1), b2 = make_batch(8, 24, 4, 2);
  Cluster straight(cluster_config(cfg), 1);
  straight.train_step(b1.x.data(), b1.y.data());
  straight.train_step(b2.x.data(), b2.y.data());

  Cluster first(cluster_config(cfg), 1);
  first.train_step(b1.x.data(), b1.y.data());
  const auto path = wse::test::scratch_file("resume.safetensors");
  write_safetensors(path, first.memoryx().checkpoint());
  RunConfig resumed_cfg = cfg;
  resumed_cfg.train.resume_from = path;
  Cluster resumed(cluster_config(resumed_cfg), 2);
  EXPECT_EQ(resumed.memoryx().step(), 1u);
  resumed.train_step(b2.x.data(), b2.y.data());

  const Checkpoint a = straight.memoryx().checkpoint(), b = resumed.memoryx().checkpoint();
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(0, std::memcmp(a.tensors[i].data.data(), b.tensors[i].data.data(), a.tensors[i].data.size() * 4)) << a.tensors[i].name;
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

// The batch the error offers fits, on every PE: it was worked out for the PE that failed alone,
// and 54 offered for [784, 6, 10] at batch 55 on 4 x 1 then failed on another PE.
TEST(FcTraining, ALayerTooBigForSramSaysWhatWouldFitAndItFits) {
  struct Case {
    std::vector<uint32_t> layers;
    uint32_t width, height, batch;
  } cases[] = {{{784, 512, 10}, 2, 1, 64}, {{784, 6, 10}, 4, 1, 55}, {{784, 10, 10}, 4, 1, 55}, {{784, 6, 10}, 4, 2, 112}};
  for (const Case& c : cases) {
    const std::string name = std::to_string(c.layers[1]) + " wide at batch " + std::to_string(c.batch);
    std::string message;
    try {
      Cluster t(cluster_config(fc_config(c.layers, c.width, c.height, c.batch, false)), 1);
    } catch (const ConfigError& e) {
      message = e.what();
    }
    ASSERT_NE(message.find("does not fit PE SRAM"), std::string::npos) << name << ": " << message;
    const size_t at = message.find("i.e. batch_size ");
    ASSERT_NE(at, std::string::npos) << message;
    const uint32_t offered = uint32_t(std::stoul(message.substr(at + 16)));
    EXPECT_LT(offered, c.batch) << message;
    EXPECT_NO_THROW(Cluster t(cluster_config(fc_config(c.layers, c.width, c.height, offered, false)), 1)) << name << ": " << message;
  }
}

TEST(FcTraining, AShortFashionMnistRunLowersTheLoss) {
  const char* dir = "/usr/share/datasets/fashion-mnist";
  Dataset d = load_idx_dataset(dir, "train", 32 * 24, "test");  // scripts/setup.sh installs dataset-fashion-mnist
  RunConfig cfg = fc_config({784, 32, 10}, 4, 4, 32, false);
  cfg.train.memoryx.optimizer = {"sgd", 0.1f, 0.9f};
  Cluster t(cluster_config(cfg), 2);
  std::vector<double> loss;
  for (uint32_t s = 0; s < 24; ++s) loss.push_back(t.train_step(&d.images[size_t(s) * 32 * 784], &d.labels[size_t(s) * 32]).loss);
  const double first = (loss[0] + loss[1] + loss[2] + loss[3]) / 4, last = (loss[20] + loss[21] + loss[22] + loss[23]) / 4;
  EXPECT_NEAR(first, std::log(10.0), 0.3);  // untrained: about ln(10)
  EXPECT_LT(last, first - 0.5) << "loss went " << first << " -> " << last;
}

TEST(Dataset, AMissingFileIsAClearError) {
  test::expect_error<UsageError>([] { load_idx_dataset("/nonexistent/fmnist", "train", 10, "test"); },
                                 {"/nonexistent/fmnist/train-images-idx3-ubyte", "not found"});
}

}  // namespace
}  // namespace wse
