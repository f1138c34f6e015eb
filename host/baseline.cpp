#include "host/baseline.hpp"

#include <Eigen/Dense>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "cluster/cluster.hpp"
#include "host/batch_order.hpp"
#include "host/training_data.hpp"
#include "host/memory_budget.hpp"
#include "core/errors.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "memoryx/memoryx.hpp"
#include "io/json_text.hpp"

namespace wse {

namespace {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Row = Eigen::Matrix<float, 1, Eigen::Dynamic>;

struct Net {
  std::vector<Mat> w;  // in x out
  std::vector<Row> b;
};

Net current(MemoryX& mx) {
  Net n;
  for (size_t l = 0; l < mx.layers(); ++l) {
    const LayerSpec& s = mx.layer(l);
    n.w.push_back(Eigen::Map<const Mat>(mx.weight(l).data.data(), s.in, s.out));
    n.b.push_back(Eigen::Map<const Row>(mx.bias(l).data.data(), s.out));
  }
  return n;
}

// Forward: the activations entering each layer, and the last layer's logits.
struct Forward {
  std::vector<Mat> a;  // a[l]: input of layer l (a[0] = the batch)
  Mat logits;
};

Forward forward(const Net& n, const float* x, uint32_t rows, uint32_t features) {
  Forward f;
  f.a.push_back(Eigen::Map<const Mat>(x, rows, features));
  for (size_t l = 0; l < n.w.size(); ++l) {
    Mat z = f.a[l] * n.w[l];
    z.rowwise() += n.b[l];
    if (l + 1 == n.w.size()) f.logits = std::move(z);
    else f.a.push_back(z.cwiseMax(0.0f));
  }
  return f;
}

// Softmax cross-entropy of each row; dZ = (softmax - onehot) / rows when `dz` is given.
double loss_of(const Mat& logits, const uint8_t* labels, uint32_t& correct, Mat* dz) {
  double sum = 0;
  if (dz) dz->resize(logits.rows(), logits.cols());
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    Eigen::Index arg = 0;
    const float mx = logits.row(r).maxCoeff(&arg);
    double s = 0;
    for (Eigen::Index c = 0; c < logits.cols(); ++c) s += std::exp(double(logits(r, c) - mx));
    const double log_sum = double(mx) + std::log(s);
    sum += log_sum - double(logits(r, labels[r]));
    correct += arg == labels[r];
    if (dz)
      for (Eigen::Index c = 0; c < logits.cols(); ++c)
        (*dz)(r, c) = float((std::exp(double(logits(r, c)) - log_sum) - (c == labels[r] ? 1.0 : 0.0)) / double(logits.rows()));
  }
  return sum / double(logits.rows());
}

}  // namespace

BaselineResult train_baseline(const RunConfig& cfg, const Dataset& train, const Dataset& test, uint64_t steps,
                              const std::function<void(uint64_t, double)>& progress) {
  // Eigen blocks a matrix product by the cache sizes it reads off the host's CPU, and the blocks
  // set the order of each dot product's sums: the same binary gave 88.77% and 89.11% for
  // examples/fc_mnist.yaml on two hosts of this kind (a docs audit, forty-sixth round). Fixed
  // sizes (a common server core's), so a baseline is the same on every host.
  Eigen::setCpuCacheSizes(kBaselineL1Bytes, kBaselineL2Bytes, kBaselineL3Bytes);
  const ClusterConfig cc = cluster_config(cfg);
  std::vector<LayerSpec> specs;
  for (size_t l = 0; l + 1 < cc.model.layers.size(); ++l) specs.push_back({Cluster::layer_name(l), cc.model.layers[l], cc.model.layers[l + 1]});
  MemoryX mx(cc.memoryx, specs);
  const uint32_t batch = cfg.train.batch_size, features = train.features;
  if (features != cc.model.layers[0])
    throw ConfigError("config " + cfg.source.string() + ": the dataset has " + std::to_string(features) + " features per sample, model.layers[0] is " +
                      std::to_string(cc.model.layers[0]));
  BatchOrder order(train.count, batch, cfg.train.shuffle, cfg.train.memoryx.seed);
  if (order.steps_per_epoch() == 0) throw ConfigError("config " + cfg.source.string() + ": data.train_samples is smaller than one batch");
  std::vector<float> x(size_t(batch) * features);
  std::vector<uint8_t> y(batch);
  BaselineResult out;
  for (uint64_t s = 0; s < steps; ++s) {
    order.gather(train, s, x.data(), y.data());
    const Net n = current(mx);
    const Forward f = forward(n, x.data(), batch, features);
    Mat dz;
    uint32_t unused = 0;
    const double loss = loss_of(f.logits, y.data(), unused, &dz);
    for (size_t l = n.w.size(); l-- > 0;) {
      const Mat dw = f.a[l].transpose() * dz;
      const Row db = dz.colwise().sum();
      if (l > 0) dz = ((dz * n.w[l].transpose()).array() * (f.a[l].array() > 0.0f).cast<float>()).matrix();
      // (in+1) x out, bias last; pruned positions get no gradient, as on the wafer.
      std::vector<float> grad(size_t(specs[l].in + 1) * specs[l].out);
      std::copy(dw.data(), dw.data() + dw.size(), grad.begin());
      std::copy(db.data(), db.data() + db.size(), grad.begin() + dw.size());
      const std::vector<uint8_t>& wm = mx.param_mask(2 * l);
      const std::vector<uint8_t>& bm = mx.param_mask(2 * l + 1);
      for (size_t i = 0; i < wm.size(); ++i)
        if (!wm[i]) grad[i] = 0.0f;
      for (size_t i = 0; i < bm.size(); ++i)
        if (!bm[i]) grad[dw.size() + i] = 0.0f;
      mx.apply_gradient(l, grad, 1.0f);
    }
    mx.finish_step();
    out.losses.push_back(loss);
    ++out.steps;
    if (progress) progress(s + 1, loss);
  }
  const Net n = current(mx);
  for (uint32_t b = 0; b + batch <= test.count; b += batch) {
    const Forward f = forward(n, &test.images[size_t(b) * test.features], batch, test.features);
    out.test_loss += loss_of(f.logits, &test.labels[b], out.correct, nullptr) * batch;
    out.scored += batch;
  }
  if (out.scored) out.test_loss /= out.scored;
  return out;
}

int run_baseline(const RunConfig& cfg, const std::filesystem::path& out_dir, bool overwrite, const std::string& command) {
  if (!kernel_kind(cfg.kernel, "config " + cfg.source.string()).training)
    throw UsageError("wse baseline trains a model: config " + cfg.source.string() + " has kernel '" + cfg.kernel + "', not a training kernel");
  const TrainConfig& tc = cfg.train;
  if (!tc.resume_from.empty())
    throw ConfigError("config " + cfg.source.string() + ": field 'training.resume_from': wse baseline trains from the config's " +
                      "initial weights, not from a checkpoint (it would not be the run it claims to match); remove the field for the baseline");
  // The wafer run this baseline is set beside must be one `wse run` takes: a batch that does not
  // split over the wafers, or a mesh with more PE rows than a wafer's samples, was trained here
  // while the run refused it. The same checks, in the same words (the layout's, SRAM's included).
  check_baseline_memory(cfg);  // before anything big is built
  const FcLayout wafer_layout(cluster_config(cfg).model, cfg.mesh, cfg.machine);
  OutputDir out(out_dir, {"--out", overwrite, false, command, {{cfg.source, "the config this run reads"}}});
  const std::string where = "config " + cfg.source.string();
  Dataset train = load_train_set(tc, where);
  Dataset test = tc.eval_samples ? load_data_set(tc, where, test_set(tc)) : Dataset{};
  const uint32_t per_epoch = BatchOrder(train.count, tc.batch_size, tc.shuffle, tc.memoryx.seed).steps_per_epoch();
  const uint64_t steps = std::min<uint64_t>(uint64_t(per_epoch) * tc.epochs, tc.max_steps ? tc.max_steps : UINT64_MAX);
  std::printf("wse baseline: %s on the host (Eigen, fp32), %llu steps of %u, same init, data order and optimizer as the wafer run\n",
              cfg.source.string().c_str(), (unsigned long long)steps, tc.batch_size);
  const auto t0 = std::chrono::steady_clock::now();
  double window = 0;
  uint32_t count = 0;
  BaselineResult r = train_baseline(cfg, train, test, steps, [&](uint64_t done, double loss) {
    window += loss, ++count;
    if (done % tc.log_every == 0 || done == steps) {
      std::printf("  step %5llu  loss %.4f\n", (unsigned long long)done, window / count);
      std::fflush(stdout);
      window = 0, count = 0;
    }
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.scored) std::printf("  test accuracy %.2f%% on %u samples (loss %.4f)\n", 100 * r.accuracy(), r.scored, r.test_loss);
  nlohmann::json j = {{"config", cfg.source.string()},
                      {"kind", "baseline: host, Eigen, fp32"},
                      {"steps", r.steps},
                      {"batch_size", tc.batch_size},
                      {"loss_per_step", r.losses},
                      {"test_samples", r.scored},
                      // Nothing scored: null, as in `wse run`'s report.
                      {"test_accuracy", r.scored ? nlohmann::json(r.accuracy()) : nlohmann::json(nullptr)},
                      {"test_loss", r.scored ? nlohmann::json(r.test_loss) : nlohmann::json(nullptr)},
                      {"host_seconds", secs}};
  const auto report = out.entry("report.json");
  write_file_atomic(report, json_text(j, 2) + "\n", "report");
  std::printf("  %.2f s on the host; report %s\n", secs, report.string().c_str());
  return 0;
}

}  // namespace wse
