#include "host/run_settings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

#include "core/errors.hpp"
#include "host/dataset_digest.hpp"
#include "memoryx/sparsity.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

namespace {

// The fewest digits that read back as the same value (an fp32's 0.1 is "0.1", not 0.100000001).
std::string real(double v, bool fp32) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    const double back = std::strtod(buf, nullptr);
    if (fp32 ? float(back) == float(v) : back == v) break;
  }
  return buf;
}

std::string opt_text(const std::optional<double>& v) { return v ? level_text(*v) : "default"; }
std::string opt_text(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : "default"; }
std::string opt_text(const std::optional<SparsityInit>& v) { return v ? to_string(*v) : "default"; }

}  // namespace

RunSettings run_settings(const TrainConfig& tc, MeshShape mesh) {
  const OptimizerConfig& o = tc.memoryx.optimizer;
  RunSettings s = {
      {"data.shuffle", tc.shuffle ? "true" : "false"},
      {"weights.seed", std::to_string(tc.memoryx.seed)},
      {"weights.encoding", encoding_name(tc.memoryx.encoding)},
      {"training.precision", tc.mixed ? "mixed" : "fp32"},
      {"training.loss_scale", real(tc.loss_scale, true)},
      {"training.num_csx", std::to_string(tc.num_csx)},
      {"mesh", std::to_string(mesh.width) + "x" + std::to_string(mesh.height)},
      {"optimizer.kind", o.kind},
      {"optimizer.lr", real(o.lr, true)},
      {"optimizer.weight_decay", real(o.weight_decay, true)},
  };
  if (o.kind == "adam") {
    s["optimizer.beta1"] = real(o.beta1, true), s["optimizer.beta2"] = real(o.beta2, true), s["optimizer.eps"] = real(o.eps, true);
  } else {
    s["optimizer.momentum"] = real(o.momentum, true);
  }
  const SparsityConfig& sp = tc.memoryx.sparsity;
  if (!sp.enabled) {
    s["sparsity"] = "none";
  } else {
    s["sparsity.sparsity"] = opt_text(sp.level);
    s["sparsity.init_method"] = to_string(sp.method);
    s["sparsity.seed"] = opt_text(sp.seed);
    std::string patterns;
    if (sp.patterns)
      for (const SparsityPattern& p : *sp.patterns)
        patterns += (patterns.empty() ? "" : "; ") + p.pattern + ": " + opt_text(p.level) + " " + opt_text(p.method) + " " + opt_text(p.seed);
    s["sparsity.param_name_patterns"] = sp.patterns ? patterns : "default";
  }
  return s;
}

RunSettings data_settings(const Dataset& train, const Dataset& test) {
  return {{"data.train_set", dataset_identity(train)}, {"data.test_set", dataset_identity(test)}};
}

RunSettings run_settings(const TrainConfig& tc, MeshShape mesh, const Dataset& train, const Dataset& test) {
  RunSettings s = run_settings(tc, mesh);
  s.merge(data_settings(train, test));
  return s;
}

std::string run_settings_text(const RunSettings& s) { return nlohmann::json(s).dump(); }

RunSettings parse_run_settings(const std::string& text, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) throw UsageError(where + ": is not a JSON object of the run's settings");
  RunSettings s;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) throw UsageError(where + ": setting '" + k + "' is not a string");
    s[k] = v.get<std::string>();
  }
  return s;
}

std::vector<std::string> run_settings_changes(const RunSettings& recorded, const RunSettings& now) {
  std::vector<std::string> out;
  // A dense run records "sparsity": "none", a sparse one its block's fields: a block added or
  // removed shows as that key on one side only.
  const bool was_dense = recorded.count("sparsity") > 0, is_dense = now.count("sparsity") > 0;
  const bool recorded_sparsity = was_dense || recorded.count("sparsity.sparsity") > 0;  // not a checkpoint of an older version
  if (recorded_sparsity && was_dense != is_dense)
    out.push_back(std::string("block 'sparsity': ") + (is_dense ? "absent" : "given") + ", but the run was " + (was_dense ? "dense" : "sparse"));
  for (const auto& [k, v] : recorded) {
    auto it = now.find(k);
    if (it == now.end() || it->second == v) continue;
    out.push_back("field '" + k + "': " + it->second + ", but the run had " + v);
  }
  return out;
}

}  // namespace wse
