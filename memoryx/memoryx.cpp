#include "memoryx/memoryx.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <set>

#include "core/errors.hpp"
#include "core/half.hpp"
#include "core/log.hpp"
#include "core/shown.hpp"

namespace wse {

namespace {

constexpr float kSentinel = std::numeric_limits<float>::quiet_NaN();

// The config's extra init op on a tensor, recorded after nn.Linear's default.
void record_init(InitGraph& g, size_t t, const ParamInit& init) {
  const std::string& k = init.kind;
  if (k == "default") {
  } else if (k == "zeros") {
    g.zero(t);
  } else if (k == "fill") {
    g.fill(t, float(init.a));
  } else if (k == "normal") {
    g.normal(t, init.a, init.b);
  } else if (k == "uniform") {
    g.uniform(t, init.a, init.b);
  } else if (k == "kaiming_uniform") {
    g.kaiming_uniform(t, init.a);
  } else if (k == "kaiming_normal") {
    g.kaiming_normal(t, init.a);
  } else if (k == "xavier_uniform") {
    g.xavier_uniform(t, init.a);
  } else if (k == "xavier_normal") {
    g.xavier_normal(t, init.a);
  } else {
    throw UsageError("model init: unknown kind '" + k + "'");
  }
  if (init.scale != 1.0) g.scale(t, init.scale);
}

// The step a checkpoint's metadata records (0 when it records none): a decimal count.
uint64_t recorded_step(const std::map<std::string, std::string>& metadata, const std::string& where) {
  auto it = metadata.find("step");
  if (it == metadata.end()) return 0;
  const std::string& s = it->second;
  uint64_t v = 0;
  bool ok = !s.empty() && s.size() <= 19;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  if (ok) v = std::stoull(s);
  if (!ok) throw UsageError(where + ": field '__metadata__.step': '" + shown(s) + "' is not a step count (expected a decimal number)");
  if (v > kMaxCheckpointStep)
    throw UsageError(where + ": field '__metadata__.step': " + s + " is beyond the largest step a run may reach (" +
                     std::to_string(kMaxCheckpointStep) + ", 2^47 - 1)");
  return v;
}

// A checkpoint written under another optimizer holds other state tensors: say so plainly.
void check_optimizer(const std::map<std::string, std::string>& metadata, const std::string& kind, const std::string& where) {
  auto it = metadata.find("optimizer");
  if (it != metadata.end() && it->second != kind)
    throw UsageError(where + ": field '__metadata__.optimizer': '" + it->second + "', but the config's optimizer is '" + kind +
                     "' (a checkpoint resumes under the optimizer that wrote it)");
}

}  // namespace

std::vector<ParamInfo> MemoryX::parameters(const std::vector<LayerSpec>& layers) {
  std::vector<ParamInfo> out;
  for (const LayerSpec& s : layers) {
    out.push_back({s.name + ".weight", {s.in, s.out}});
    out.push_back({s.name + ".bias", {s.out}});
  }
  return out;
}

MemoryX::MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers, Checkpoint* resume, const std::string& where)
    : cfg_(cfg), layers_(layers), fresh_(resume == nullptr) {
  if (resume) {
    step_ = recorded_step(resume->metadata, where);
    check_optimizer(resume->metadata, cfg.optimizer.kind, where);
  }
  initialize(resume, nullptr, where);
  sparsify(where);
}

MemoryX::MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers, const SafetensorsFile& resume)
    : cfg_(cfg), layers_(layers) {
  step_ = recorded_step(resume.metadata(), resume.where());
  check_optimizer(resume.metadata(), cfg.optimizer.kind, resume.where());
  initialize(nullptr, &resume, resume.where());
  sparsify(resume.where());
}

void MemoryX::initialize(Checkpoint* in_memory, const SafetensorsFile* file, const std::string& where) {
  // Record the model's initialization as PyTorch would run it, then materialize into the store.
  InitGraph g(cfg_.seed, cfg_.init);
  const auto state_names = optimizer_state_names(cfg_.optimizer);
  struct Slot {
    size_t param;
    int state;  // -1 = the parameter itself
  };
  std::vector<Slot> slots;
  const auto infos = parameters(layers_);
  for (size_t p = 0; p < infos.size(); ++p) {
    const LayerSpec& s = layers_[p / 2];
    const size_t t = g.add_tensor(infos[p].name, infos[p].shape, s.in, s.out);
    slots.push_back({p, -1});
    // nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) on the weight (a bound of
    // 1/sqrt(in)), U(+-1/sqrt(in)) on the bias.
    if (p % 2 == 0) {
      g.kaiming_uniform(t, std::sqrt(5.0));
      record_init(g, t, cfg_.weight_init);
    } else {
      const double bound = 1.0 / std::sqrt(double(s.in));
      g.uniform(t, -bound, bound);
      record_init(g, t, cfg_.bias_init);
    }
    for (size_t k = 0; k < state_names.size(); ++k) {
      g.zero(g.add_tensor(infos[p].name + "." + state_names[k], infos[p].shape, s.in, s.out));
      slots.push_back({p, int(k)});
    }
  }
  if (in_memory || file) {
    // Every tensor the checkpoint holds must be one of this model's (no stray or foreign state).
    std::set<std::string> expected;
    for (size_t t = 0; t < slots.size(); ++t) {
      const ParamInfo& info = infos[slots[t].param];
      expected.insert(slots[t].state < 0 ? info.name : info.name + "." + state_names[size_t(slots[t].state)]);
    }
    auto check_known = [&](const std::string& name) {
      if (!expected.count(name))
        throw UsageError(where + ": tensor '" + shown(name) + "' is not a parameter or optimizer state of this model (is it a checkpoint of this model and optimizer?)");
    };
    if (file)
      for (const TensorEntry& e : file->tensors()) check_known(e.name);
    if (in_memory)
      for (const Tensor& c : in_memory->tensors) check_known(c.name);
    // Loading a checkpoint is one more op per tensor: it overwrites, so the init ops are pruned.
    for (size_t t = 0; t < slots.size(); ++t) {
      const ParamInfo& info = infos[slots[t].param];
      const std::string name = slots[t].state < 0 ? info.name : info.name + "." + state_names[size_t(slots[t].state)];
      const std::vector<uint32_t>* shape = nullptr;
      Tensor* src = nullptr;
      const TensorEntry* entry = file ? file->find(name) : nullptr;
      if (in_memory)
        for (Tensor& c : in_memory->tensors)
          if (c.name == name) src = &c;
      if (src) shape = &src->shape;
      if (entry) shape = &entry->shape;
      if (!shape) throw UsageError(where + ": has no tensor '" + name + "' (is it a checkpoint of this model and optimizer?)");
      if (*shape != info.shape) {
        auto text = [](const std::vector<uint32_t>& s) {
          std::string t = "[";
          for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
          return t + "]";
        };
        throw UsageError(where + ": tensor '" + name + "' has shape " + text(*shape) + ", but the model's is " + text(info.shape));
      }
      if (entry) g.load_from(t, [file, entry](float* out, size_t) { file->read(*entry, out); });
      else g.copy_from(t, std::make_shared<const std::vector<float>>(std::move(src->data)));
    }
  }
  std::vector<Tensor> store = g.materialize();
  init_stats_ = g.stats();
  params_.resize(infos.size());
  states_.assign(infos.size(), std::vector<Tensor>(state_names.size()));
  for (size_t t = 0; t < slots.size(); ++t) {
    if (slots[t].state < 0) params_[slots[t].param] = std::move(store[t]);
    else states_[slots[t].param][size_t(slots[t].state)] = std::move(store[t]);
  }
}

void MemoryX::sparsify(const std::string& where) {
  const auto infos = parameters(layers_);
  const SparsityPlan plan = plan_sparsity(cfg_.sparsity, infos, cfg_.seed);
  for (const auto& w : plan.warnings) log(LogLevel::Warning, w);
  masks_.assign(params_.size(), {});
  size_t next = 0;
  for (size_t p = 0; p < params_.size(); ++p) {
    Tensor& w = params_[p];
    // A sparse checkpoint marks its pruned weights with NaN.
    std::vector<uint8_t> prior;
    uint64_t sentinels = 0;
    for (float v : w.data) sentinels += std::isnan(v);
    if (sentinels) {
      if (!cfg_.sparsity.enabled)
        throw UsageError(where + ": '" + w.name + "' holds " + std::to_string(sentinels) +
                         " NaN sentinels, so it is a sparse run's checkpoint, but the config has no 'sparsity' block; "
                         "add one (the same level keeps its pattern) or run `wse finalize-checkpoint` on it first");
      prior.resize(w.size());
      for (size_t i = 0; i < w.size(); ++i) prior[i] = !std::isnan(w.data[i]);
    }
    const bool planned = next < plan.params.size() && plan.params[next].param == p;
    if (!planned && prior.empty()) continue;
    // A sparse parameter the config no longer selects is regrown in full (level 0).
    ParamSparsity ps = planned ? plan.params[next++] : ParamSparsity{p, w.name, 0.0, SparsityInit::Random, cfg_.seed + p, ""};
    MaskChange change;
    std::vector<uint8_t> mask = sparsity_mask(w.data.data(), w.size(), ps, prior, &change);
    for (size_t i = 0; i < w.size(); ++i) {
      // Pruned weights and regrown ones start from 0, and so do their optimizer states.
      if (mask[i] && (prior.empty() || prior[i])) continue;
      w.data[i] = 0.0f;
      for (Tensor& s : states_[p]) s.data[i] = 0.0f;
    }
    SparsifiedParam rec{ps, w.size(), change.pruned, change.newly_pruned, change.regrown, !prior.empty()};
    // from_zeros prunes the zeros it finds: a level would be the config's, which it does not use.
    const std::string how = ps.method == SparsityInit::FromZeros ? std::string(" from_zeros (its zero weights)")
                                                                  : std::string(" ") + to_string(ps.method) + " level " + level_text(ps.level);
    log(LogLevel::Debug, "sparsity: " + w.name + " [" + std::to_string(w.size()) + "]" + how + " seed " + std::to_string(ps.seed) + ": " + std::to_string(change.pruned) +
                             " pruned, " + std::to_string(w.size() - change.pruned) + " kept" +
                             (prior.empty() ? std::string()
                                            : " (checkpoint pattern: " + std::to_string(change.newly_pruned) + " newly pruned, " +
                                                  std::to_string(change.regrown) + " regrown)"));
    if (change.pruned) masks_[p] = std::move(mask);
    sparsified_.push_back(rec);
  }
  // Any NaN left is not a sentinel the sparsity rules explain; an infinity is never a weight or a
  // state a finite run reaches, and Adam's second moment (a mean of squares) is never negative:
  // each would train on NaN from the first step.
  // Weights cross the fabric as fp16 in mixed precision and in every sparse stream (a sparse
  // wavelet holds a 16-bit value): an initial weight beyond fp16's range arrives as inf, and
  // training ran on NaN with exit code 0. Initial weights are the config's doing: checked against
  // it, naming its field (a checkpoint's weights are what training made them).
  const bool fp16_fabric = cfg_.encoding != StreamEncoding::Dense;
  auto init_error = [&](const Tensor& t, size_t i, const std::string& what) {
    const std::string field = t.name.ends_with(".bias") ? "model.init.bias" : "model.init.weight";
    throw ConfigError("field '" + field + "': the initial '" + t.name + "' is " + what + " at element " + std::to_string(i) +
                      "; choose a value, mean, std, range or scale whose weights " +
                      (fp16_fabric ? "fp16 holds (at most 65504 in magnitude: they cross the fabric as fp16)" : "fp32 holds"));
  };
  auto check = [&](const Tensor& t) {
    const bool second_moment = t.name.ends_with("exp_avg_sq");
    const bool initial_weight = fresh_ && (t.name.ends_with(".weight") || t.name.ends_with(".bias"));
    for (size_t i = 0; i < t.data.size(); ++i) {
      const float v = t.data[i];
      if (initial_weight && std::isinf(v)) init_error(t, i, v > 0 ? "+inf (the init overflows fp32)" : "-inf (the init overflows fp32)");
      if (initial_weight && fp16_fabric && std::isinf(round_to_half(v))) {
        char text[32];
        std::snprintf(text, sizeof text, "%.7g", double(v));
        init_error(t, i, text);
      }
      if (std::isnan(v)) throw UsageError(where + ": tensor '" + t.name + "' holds NaN at a weight that is not sparse");
      if (std::isinf(v)) throw UsageError(where + ": tensor '" + t.name + "' holds " + (v > 0 ? "+inf" : "-inf") + " at element " + std::to_string(i));
      if (second_moment && v < 0)
        throw UsageError(where + ": tensor '" + t.name + "' holds " + std::to_string(v) + " at element " + std::to_string(i) +
                         ", but Adam's second moment is never negative");
    }
  };
  for (size_t p = 0; p < params_.size(); ++p) {
    check(params_[p]);
    for (const Tensor& s : states_[p]) check(s);
  }
}

LayerView MemoryX::view(size_t l) const {
  const LayerSpec& s = layers_[l];
  LayerView v{s.name, uint32_t(l), s.in, s.out, params_[2 * l].data.data(), params_[2 * l + 1].data.data()};
  if (!masks_[2 * l].empty()) v.weight_mask = masks_[2 * l].data();
  if (!masks_[2 * l + 1].empty()) v.bias_mask = masks_[2 * l + 1].data();
  return v;
}

uint64_t MemoryX::stream_cycles(uint64_t bytes) const {
  return cfg_.bytes_per_cycle > 0 ? uint64_t(std::ceil(double(bytes) / cfg_.bytes_per_cycle)) : 0;
}

bool MemoryX::apply_gradient(size_t l, const std::vector<float>& grad, float loss_scale) {
  const LayerSpec& s = layers_[l];
  if (grad.size() != size_t(s.in + 1) * s.out) throw std::logic_error("gradient of " + s.name + " has the wrong size");
  // Mixed precision: the wafer's fp16 gradients were scaled up by the loss scale; a gradient that
  // overflowed fp16 anyway is not applied (the step skips this layer's update).
  for (float g : grad)
    if (!std::isfinite(g)) return false;
  std::vector<float> gw(grad.begin(), grad.begin() + long(size_t(s.in) * s.out));
  std::vector<float> gb(grad.begin() + long(size_t(s.in) * s.out), grad.end());
  if (loss_scale != 1.0f) {
    for (float& g : gw) g /= loss_scale;
    for (float& g : gb) g /= loss_scale;
  }
  auto step = [&](size_t p, const std::vector<float>& g) {
    std::vector<Tensor*> st;
    for (Tensor& t : states_[p]) st.push_back(&t);
    optimizer_step(cfg_.optimizer, step_ + 1, params_[p], g, st, masks_[p].empty() ? nullptr : &masks_[p]);
  };
  step(2 * l, gw);
  step(2 * l + 1, gb);
  return true;
}

std::vector<TensorView> MemoryX::checkpoint_views() const {
  std::vector<TensorView> views;
  for (size_t p = 0; p < params_.size(); ++p) {
    const uint8_t* mask = masks_[p].empty() ? nullptr : masks_[p].data();
    views.push_back({&params_[p].name, &params_[p].shape, params_[p].data.data(), params_[p].size(), mask});
    for (const Tensor& s : states_[p]) views.push_back({&s.name, &s.shape, s.data.data(), s.size(), mask});
  }
  return views;
}

std::map<std::string, std::string> MemoryX::checkpoint_metadata() const {
  std::map<std::string, std::string> m = run_metadata_;
  m["step"] = std::to_string(step_);
  m["optimizer"] = cfg_.optimizer.kind;
  m["format"] = "wse-emu memoryx";
  return m;
}

Checkpoint MemoryX::checkpoint() const {
  Checkpoint c;
  for (const TensorView& v : checkpoint_views()) {
    Tensor t{*v.name, *v.shape, std::vector<float>(v.data, v.data + v.numel)};
    if (v.mask)
      for (size_t i = 0; i < v.numel; ++i)
        if (!v.mask[i]) t.data[i] = kSentinel;
    c.tensors.push_back(std::move(t));
  }
  c.metadata = checkpoint_metadata();
  return c;
}

void MemoryX::write_checkpoint(const std::filesystem::path& path) const {
  write_safetensors(path, checkpoint_views(), checkpoint_metadata());
}

}  // namespace wse
