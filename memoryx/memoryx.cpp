#include "memoryx/memoryx.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fabric/errors.hpp"
#include "fabric/splitmix.hpp"

namespace wse {

namespace {

// Uniform in [-1, 1) from (seed, stream, index): independent of order and threads.
double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  return double(splitmix64(splitmix64(seed * 0x100000001b3ull + stream) ^ i) >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace

MemoryX::MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers) : cfg_(cfg), layers_(layers) {
  const auto state_names = optimizer_state_names(cfg.optimizer);
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerSpec& s = layers[l];
    // nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
    const double bound = 1.0 / std::sqrt(double(s.in));
    Tensor w = Tensor::zeros(s.name + ".weight", {s.in, s.out});
    Tensor b = Tensor::zeros(s.name + ".bias", {s.out});
    for (size_t i = 0; i < w.size(); ++i) w.data[i] = float(bound * uniform(cfg.seed, 2 * l, i));
    for (size_t i = 0; i < b.size(); ++i) b.data[i] = float(bound * uniform(cfg.seed, 2 * l + 1, i));
    // Static sparsity: prune round(sparsity * numel) weights chosen by a seeded shuffle.
    std::vector<uint8_t> mask(w.size(), 1);
    const auto prune = size_t(std::llround(double(cfg.sparsity) * double(w.size())));
    if (prune) {
      std::vector<std::pair<uint64_t, uint32_t>> order(w.size());
      for (uint32_t i = 0; i < w.size(); ++i) order[i] = {splitmix64(cfg.seed ^ splitmix64(1000 + l) ^ i), i};
      std::sort(order.begin(), order.end());
      for (size_t i = 0; i < prune; ++i) mask[order[i].second] = 0, w.data[order[i].second] = 0.0f;
    }
    masks_.push_back(std::move(mask));
    for (Tensor* t : {&w, &b}) {
      std::vector<Tensor> st;
      for (const auto& n : state_names) st.push_back(Tensor::zeros(t->name + "." + n, t->shape));
      states_.push_back(std::move(st));
    }
    params_.push_back(std::move(w));
    params_.push_back(std::move(b));
  }
}

LayerView MemoryX::view(size_t l) const {
  const LayerSpec& s = layers_[l];
  return {s.name, uint32_t(l), s.in, s.out, params_[2 * l].data.data(), params_[2 * l + 1].data.data()};
}

uint64_t MemoryX::stream_cycles(uint64_t bytes) const {
  return cfg_.bytes_per_cycle > 0 ? uint64_t(std::ceil(double(bytes) / cfg_.bytes_per_cycle)) : 0;
}

void MemoryX::apply_gradient(size_t l, const std::vector<float>& grad) {
  const LayerSpec& s = layers_[l];
  if (grad.size() != size_t(s.in + 1) * s.out) throw std::logic_error("gradient of " + s.name + " has the wrong size");
  std::vector<float> gw(grad.begin(), grad.begin() + long(size_t(s.in) * s.out));
  std::vector<float> gb(grad.begin() + long(size_t(s.in) * s.out), grad.end());
  auto states = [&](size_t p) {
    std::vector<Tensor*> out;
    for (Tensor& t : states_[p]) out.push_back(&t);
    return out;
  };
  optimizer_step(cfg_.optimizer, step_ + 1, params_[2 * l], gw, states(2 * l), &masks_[l]);
  optimizer_step(cfg_.optimizer, step_ + 1, params_[2 * l + 1], gb, states(2 * l + 1));
}

Checkpoint MemoryX::checkpoint() const {
  Checkpoint c;
  for (size_t p = 0; p < params_.size(); ++p) {
    c.tensors.push_back(params_[p]);
    for (const Tensor& s : states_[p]) c.tensors.push_back(s);
  }
  c.metadata["step"] = std::to_string(step_);
  c.metadata["optimizer"] = cfg_.optimizer.kind;
  c.metadata["format"] = "wse-emu memoryx";
  return c;
}

void MemoryX::restore(const Checkpoint& ckpt, const std::string& where) {
  auto load = [&](Tensor& t) {
    const Tensor* src = ckpt.find(t.name);
    if (!src) throw UsageError(where + ": has no tensor '" + t.name + "' (is it a checkpoint of this model and optimizer?)");
    if (src->shape != t.shape) throw UsageError(where + ": tensor '" + t.name + "' has a different shape than the model's");
    t.data = src->data;
  };
  for (size_t p = 0; p < params_.size(); ++p) {
    load(params_[p]);
    for (Tensor& s : states_[p]) load(s);
  }
  for (size_t l = 0; l < layers_.size(); ++l)  // a restored zero weight stays pruned
    if (cfg_.sparsity > 0)
      for (size_t i = 0; i < masks_[l].size(); ++i) masks_[l][i] = params_[2 * l].data[i] != 0.0f;
  auto it = ckpt.metadata.find("step");
  step_ = it == ckpt.metadata.end() ? 0 : std::stoull(it->second);
}

}  // namespace wse
