#include "host/config.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "core/yaml_fields.hpp"
#include "io/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

namespace wse {

#ifndef WSE_MACHINES_DIR
#define WSE_MACHINES_DIR "machines"
#endif

std::filesystem::path machines_dir() {
  if (const char* env = std::getenv("WSE_MACHINES_DIR"); env && *env) return env;  // set but empty: as if unset
  return WSE_MACHINES_DIR;
}

namespace {

using yaml::describe;
using yaml::scalar;
using yaml::positive;
using yaml::integer_in;
using yaml::check_keys;
using yaml::count;
using yaml::number;
using yaml::real_in;

// A path field: an empty one ('') was taken as unset (resume_from: '' trained from scratch,
// data.dir: '' read the current directory).
std::filesystem::path non_empty_path(const YAML::Node& n, const std::string& where, const std::string& field, const char* expected) {
  const std::string v = scalar<std::string>(n, where, field, expected);
  if (v.empty()) throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got an empty string (leave the field out for its default)");
  return v;
}

// A config or preset is a few KiB (a sparsity block's list of patterns, a few more); the bound
// keeps a wrong path (a disk image, /dev/zero) a clear error rather than an endless read.
constexpr uint64_t kMaxYamlBytes = uint64_t(16) << 20;

// Documents in `text` that hold a node other than null, counted up to two.
size_t documents_with_content(const std::string& text) {
  struct Seen : YAML::EventHandler {
    bool content = false;
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content = true; }
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { content = true; }
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { content = true; }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { content = true; }
    void OnMapEnd() override {}
  };
  std::istringstream in(text);
  YAML::Parser parser(in);
  size_t docs = 0;
  for (int i = 0; i < 2; ++i) {
    Seen seen;
    if (!parser.HandleNextDocument(seen)) break;
    docs += seen.content;
  }
  return docs;
}

YAML::Node load_yaml(const std::filesystem::path& path, const std::string& what) {
  // Read whole and bounded (io/input_file.hpp): a directory or a device is named as such, where
  // YAML::LoadFile() let the stream's own error out as an internal one.
  std::vector<uint8_t> bytes;
  try {
    bytes = read_input_file(path, what, kMaxYamlBytes);
  } catch (const UsageError& e) {
    throw ConfigError(e.what());
  }
  try {
    const std::string text(bytes.begin(), bytes.end());
    YAML::Node root = YAML::Load(text);
    // One document: a second (after `---`) was silently ignored. Looked for with the parser's
    // events, two documents at most: YAML::LoadAll found documents without end in a 347-byte
    // input (fuzz_run_config: a timeout).
    if (documents_with_content(text) > 1)
      throw ConfigError(what + " " + path.string() + ": holds more than one YAML document (separated by ---); expected one");
    return root;
  } catch (const YAML::Exception& e) {
    // The parser's own words and where, without its "yaml-cpp: error at" prefix, and a control
    // byte it quotes shown as \xNN.
    const std::string at = e.mark.is_null() ? "" : " at line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1);
    // yaml-cpp's depth guard says "bad file": say what it stopped at (a CLI audit, forty-sixth round).
    if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e))
      throw ConfigError(what + " " + path.string() + ": not valid YAML" + at + ": lists and mappings nested " + std::to_string(deep->depth()) +
                        " levels inside one another, where the YAML reader stops (no config needs that many)");
    throw ConfigError(what + " " + path.string() + ": not valid YAML" + at + ": " + shown(e.msg));
  }
}

// model.init.weight / .bias: {kind, mean, std, low, high, value, a, gain, scale}.
ParamInit load_param_init(const YAML::Node& n, const std::string& where, const std::string& field) {
  check_keys(n, where, field, {"kind", "mean", "std", "low", "high", "value", "a", "gain", "scale"});
  ParamInit p;
  if (!n["kind"]) throw ConfigError(where + ": field '" + field + ".kind' is required");
  p.kind = scalar<std::string>(n["kind"], where, field + ".kind", "an init kind");
  // Finite and within fp32's range: the weights are fp32 (an inf mean or a fill of 1e39 made
  // every loss NaN).
  auto num = [&](const char* key, double dflt) {
    if (!n[key]) return dflt;
    const double v = scalar<double>(n[key], where, field + "." + key, "a number");
    if (!(std::fabs(v) <= double(std::numeric_limits<float>::max())))
      throw ConfigError(where + ": field '" + field + "." + key + "': expected a finite number within fp32's range, got " + describe(n[key]));
    return v;
  };
  if (p.kind == "fill") p.a = num("value", 0);
  else if (p.kind == "normal") p.a = num("mean", 0), p.b = num("std", 1);
  else if (p.kind == "uniform") p.a = num("low", 0), p.b = num("high", 1);
  else if (p.kind == "kaiming_uniform" || p.kind == "kaiming_normal") p.a = num("a", 0);
  else if (p.kind == "xavier_uniform" || p.kind == "xavier_normal") p.a = num("gain", 1);
  else if (p.kind != "default" && p.kind != "zeros")
    throw ConfigError(where + ": field '" + field + ".kind': unknown init '" + p.kind +
                      "' (known: default, zeros, fill, normal, uniform, kaiming_uniform, kaiming_normal, xavier_uniform, xavier_normal)");
  // A parameter of another kind was taken and ignored ({kind: uniform, std: 5} ran uniform on
  // [0, 1]: a review, forty-fifth round): each kind reads its own, and scale.
  {
    const std::vector<std::string> reads = p.kind == "fill"      ? std::vector<std::string>{"value"}
                                           : p.kind == "normal"  ? std::vector<std::string>{"mean", "std"}
                                           : p.kind == "uniform" ? std::vector<std::string>{"low", "high"}
                                           : p.kind == "kaiming_uniform" || p.kind == "kaiming_normal" ? std::vector<std::string>{"a"}
                                           : p.kind == "xavier_uniform" || p.kind == "xavier_normal"   ? std::vector<std::string>{"gain"}
                                                                                                      : std::vector<std::string>{};
    for (const char* key : {"mean", "std", "low", "high", "value", "a", "gain"}) {
      if (!n[key] || std::find(reads.begin(), reads.end(), key) != reads.end()) continue;
      std::string list;
      for (const std::string& r : reads) list += r + ", ";
      throw ConfigError(where + ": field '" + field + "." + key + "': init '" + p.kind + "' does not read it (it reads " + list + "scale)");
    }
  }
  if (p.kind == "normal" && !(p.b >= 0))
    throw ConfigError(where + ": field '" + field + ".std': expected a number >= 0, got " + describe(n["std"]));
  if ((p.kind == "xavier_uniform" || p.kind == "xavier_normal") && !(p.a >= 0))
    throw ConfigError(where + ": field '" + field + ".gain': expected a number >= 0, got " + describe(n["gain"]));
  if (p.kind == "uniform" && !(p.a <= p.b))
    throw ConfigError(where + ": field '" + field + "': expected low <= high, got low " + (n["low"] ? describe(n["low"]) : "0 (the default)") +
                      " and high " + (n["high"] ? describe(n["high"]) : "1 (the default)"));
  p.scale = num("scale", 1);
  // PyTorch computes fans from a tensor's two dimensions and refuses a 1-D one; these took the
  // layer's fans for a bias instead, an init no PyTorch model could have.
  if (field.ends_with(".bias") && (p.kind.starts_with("kaiming_") || p.kind.starts_with("xavier_")))
    throw ConfigError(where + ": field '" + field + ".kind': " + p.kind +
                      " needs a 2-D tensor's fan-in and fan-out, and a bias has one dimension (PyTorch refuses it too); "
                      "use default, zeros, fill, normal or uniform");
  return p;
}

double sparsity_level(const YAML::Node& n, const std::string& where, const std::string& field) {
  const double v = scalar<double>(n, where, field, "a sparsity level in [0, 1)");
  if (!(v >= 0 && v < 1)) throw ConfigError(where + ": field '" + field + "': expected a level in [0, 1), got " + describe(n));
  return v;
}

SparsityInit sparsity_init(const YAML::Node& n, const std::string& where, const std::string& field) {
  const std::string name = scalar<std::string>(n, where, field, "random, topk or from_zeros");
  try {
    return parse_sparsity_init(name, where + ": field '" + field + "'");
  } catch (const UsageError& e) {
    throw ConfigError(e.what());
  }
}

SparsityPattern sparsity_pattern(const YAML::Node& n, const std::string& where, const std::string& field) {
  SparsityPattern p;
  p.pattern = scalar<std::string>(n, where, field, "a regular expression");
  // An empty regex matches every name, biases included: likely a pattern left out, not meant (a
  // CLI audit, forty-sixth round: `param_name_patterns: ''` sparsified every parameter, and every
  // other empty string a config gives is refused).
  if (p.pattern.empty())
    throw ConfigError(where + ": field '" + field + "': an empty regex, which would select every parameter, biases included; "
                      "give '.*' to mean that, or leave the field out for the default selection");
  // std::regex compiles (and matches) by recursion: bound what it is given, so a pathological
  // pattern is an error, not a stack overflow. Parameter names are short; so are their patterns.
  constexpr size_t kMaxLength = 256, kMaxDepth = 16;
  size_t depth = 0, max_depth = 0;
  for (char c : p.pattern) {
    if (c == '(' || c == '[') max_depth = std::max(max_depth, ++depth);
    if ((c == ')' || c == ']') && depth) --depth;
  }
  if (p.pattern.size() > kMaxLength || max_depth > kMaxDepth)
    throw ConfigError(where + ": field '" + field + "': a regex of " + std::to_string(p.pattern.size()) + " characters nested " +
                      std::to_string(max_depth) + " deep; expected at most " + std::to_string(kMaxLength) + " characters and " +
                      std::to_string(kMaxDepth) + " levels of brackets");
  try {
    p.re = std::regex(p.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError(where + ": field '" + field + "': regex '" + p.pattern + "' does not compile: " + e.what());
  }
  return p;
}

// The `sparsity:` block: a level, or {sparsity, init_method, seed, param_name_patterns}.
void load_sparsity(SparsityConfig& sc, const YAML::Node& n, const std::string& where) {
  sc.enabled = true;
  if (n.IsScalar()) {
    sc.level = sparsity_level(n, where, "sparsity");
    return;
  }
  check_keys(n, where, "sparsity", {"sparsity", "init_method", "seed", "param_name_patterns"});
  if (n["sparsity"]) sc.level = sparsity_level(n["sparsity"], where, "sparsity.sparsity");
  if (n["init_method"]) sc.method = sparsity_init(n["init_method"], where, "sparsity.init_method");
  if (n["seed"]) sc.seed = integer_in(n["seed"], where, "sparsity.seed", 0, UINT64_MAX);
  YAML::Node pats = n["param_name_patterns"];
  if (!pats) return;
  const std::string f = "sparsity.param_name_patterns";
  sc.patterns.emplace();
  if (pats.IsScalar()) {
    sc.patterns->push_back(sparsity_pattern(pats, where, f));
  } else if (pats.IsSequence()) {
    for (size_t i = 0; i < pats.size(); ++i) {
      sc.patterns->push_back(sparsity_pattern(pats[i], where, f + "[" + std::to_string(i) + "]"));
      for (size_t k = 0; k + 1 < sc.patterns->size(); ++k)
        if ((*sc.patterns)[k].pattern == sc.patterns->back().pattern)
          throw ConfigError(where + ": field '" + f + "[" + std::to_string(i) + "]': the regex '" + sc.patterns->back().pattern +
                            "' is given twice (also at [" + std::to_string(k) + "]); give it once");
    }
  } else if (pats.IsMap()) {
    // regex -> overrides, in the order written: the first match wins. A regex given twice is an
    // error, as any field given twice is (the second was never reached, and reported as matching
    // no parameter).
    std::set<std::string> seen;
    for (const auto& kv : pats) {
      if (!kv.first.IsScalar()) throw ConfigError(where + ": field '" + f + "': a key is " + describe(kv.first) + ", expected a regex");
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) throw ConfigError(where + ": field '" + f + "': the regex '" + key + "' is given twice; give it once");
      const std::string kf = f + "." + key;
      SparsityPattern p = sparsity_pattern(kv.first, where, f);
      if (kv.second && !kv.second.IsNull()) {
        check_keys(kv.second, where, kf, {"sparsity", "init_method", "seed"});
        if (kv.second["sparsity"]) p.level = sparsity_level(kv.second["sparsity"], where, kf + ".sparsity");
        if (kv.second["init_method"]) p.method = sparsity_init(kv.second["init_method"], where, kf + ".init_method");
        if (kv.second["seed"]) p.seed = integer_in(kv.second["seed"], where, kf + ".seed", 0, UINT64_MAX);
      }
      sc.patterns->push_back(std::move(p));
    }
  } else {
    throw ConfigError(where + ": field '" + f + "': expected a regex, a list of regexes or a mapping regex -> overrides");
  }
  if (sc.patterns->empty()) throw ConfigError(where + ": field '" + f + "' is empty (leave it out for the default selection)");
}

void load_train_fields(TrainConfig& t, MachineSpec& machine, const YAML::Node& root, const std::string& where) {
  if (YAML::Node m = root["model"]) {
    check_keys(m, where, "model", {"layers", "init"});
    if (YAML::Node init = m["init"]) {
      check_keys(init, where, "model.init", {"weight", "bias"});
      if (init["weight"]) t.memoryx.weight_init = load_param_init(init["weight"], where, "model.init.weight");
      if (init["bias"]) t.memoryx.bias_init = load_param_init(init["bias"], where, "model.init.bias");
    }
    if (YAML::Node layers = m["layers"]) {
      if (!layers.IsSequence() || layers.size() < 2)
        throw ConfigError(where + ": field 'model.layers': expected a list of at least two feature sizes, e.g. [784, 256, 256, 10]");
      t.layers.clear();
      for (size_t i = 0; i < layers.size(); ++i)
        t.layers.push_back(uint32_t(positive(layers[i], where, "model.layers[" + std::to_string(i) + "]", 1u << 20)));
    }
  }
  if (t.layers.front() != 784 || t.layers.back() != 10)
    throw ConfigError(where + ": field 'model.layers': Fashion-MNIST needs 784 inputs and 10 outputs, got " +
                      std::to_string(t.layers.front()) + " and " + std::to_string(t.layers.back()));
  if (YAML::Node d = root["data"]) {
    check_keys(d, where, "data", {"dir", "train_samples", "eval_samples", "shuffle"});
    if (d["dir"]) t.data_dir = non_empty_path(d["dir"], where, "data.dir", "a directory");
    if (d["train_samples"]) t.train_samples = uint32_t(count(d["train_samples"], where, "data.train_samples", 1u << 30));
    if (d["eval_samples"]) t.eval_samples = uint32_t(count(d["eval_samples"], where, "data.eval_samples", 1u << 30));
    if (d["shuffle"]) t.shuffle = scalar<bool>(d["shuffle"], where, "data.shuffle", "true or false");
  }
  if (YAML::Node tr = root["training"]) {
    check_keys(tr, where, "training",
               {"batch_size", "num_csx", "epochs", "max_steps", "log_every", "checkpoint_every", "checkpoint_dir", "resume_from",
                "precision", "loss_scale", "retain_last_layer", "detail"});
    if (tr["batch_size"]) t.batch_size = uint32_t(positive(tr["batch_size"], where, "training.batch_size", 1u << 20));
    if (tr["num_csx"]) t.num_csx = uint32_t(positive(tr["num_csx"], where, "training.num_csx", 64));
    if (tr["epochs"]) t.epochs = uint32_t(positive(tr["epochs"], where, "training.epochs", 1000));
    if (tr["max_steps"]) t.max_steps = uint32_t(count(tr["max_steps"], where, "training.max_steps", 1u << 30));
    if (tr["log_every"]) t.log_every = uint32_t(positive(tr["log_every"], where, "training.log_every", 1u << 30));
    if (tr["checkpoint_every"]) t.checkpoint_every = uint32_t(count(tr["checkpoint_every"], where, "training.checkpoint_every", 1u << 30));
    if (tr["checkpoint_dir"]) t.checkpoint_dir = non_empty_path(tr["checkpoint_dir"], where, "training.checkpoint_dir", "a directory");
    if (tr["resume_from"]) t.resume_from = non_empty_path(tr["resume_from"], where, "training.resume_from", "a checkpoint file");
    if (tr["precision"]) {
      const std::string p = scalar<std::string>(tr["precision"], where, "training.precision", "fp32 or mixed");
      if (p != "fp32" && p != "mixed") throw ConfigError(where + ": field 'training.precision': expected fp32 or mixed, got '" + p + "'");
      t.mixed = p == "mixed";
    }
    t.loss_scale = t.mixed ? 128.0f : 1.0f;
    if (tr["loss_scale"]) t.loss_scale = number(tr["loss_scale"], where, "training.loss_scale", 1.0 / 65536, 65536);
    if (tr["retain_last_layer"])
      t.retain_last_layer = scalar<bool>(tr["retain_last_layer"], where, "training.retain_last_layer", "true or false");
    if (YAML::Node d = tr["detail"]) {
      // all | none | {every: N, first: M}: which steps run cycle by cycle.
      if (d.IsMap()) {
        check_keys(d, where, "training.detail", {"every", "first"});
        t.detail.mode = DetailPolicy::Mode::Sampled;
        t.detail.every = d["every"] ? count(d["every"], where, "training.detail.every", 1u << 30) : 0;
        t.detail.first = d["first"] ? count(d["first"], where, "training.detail.first", 1u << 30) : 0;
        if (!t.detail.every && !t.detail.first)
          throw ConfigError(where + ": field 'training.detail': 'every' and 'first' are both 0 (or missing): no step would run cycle by "
                            "cycle after the first; give every >= 1 or first >= 1, or write none");
      } else {
        const std::string v = scalar<std::string>(d, where, "training.detail", "all, none or {every: N, first: M}");
        if (v == "all") t.detail.mode = DetailPolicy::Mode::All;
        else if (v == "none") t.detail.mode = DetailPolicy::Mode::None;
        else throw ConfigError(where + ": field 'training.detail': expected all, none or {every: N, first: M}, got '" + v + "'");
      }
    }
  }
  if (YAML::Node o = root["optimizer"]) {
    check_keys(o, where, "optimizer", {"kind", "lr", "momentum", "beta1", "beta2", "eps", "weight_decay"});
    OptimizerConfig& oc = t.memoryx.optimizer;
    if (o["kind"]) oc.kind = scalar<std::string>(o["kind"], where, "optimizer.kind", "sgd or adam");
    if (oc.kind != "sgd" && oc.kind != "adam")
      throw ConfigError(where + ": field 'optimizer.kind': unknown optimizer '" + oc.kind + "' (known: sgd, adam)");
    // A setting of the other optimizer is a mistake, not a no-op: `momentum:` under Adam (meaning
    // beta1) trained with beta1 0.9, silently.
    for (const char* key : {"momentum", "beta1", "beta2", "eps"}) {
      const bool sgds = std::string(key) == "momentum";
      if (o[key] && sgds != (oc.kind == "sgd"))
        throw ConfigError(where + ": field 'optimizer." + key + "' is " + (sgds ? "SGD's" : "Adam's") + ", but optimizer.kind is " +
                          oc.kind + (sgds ? " (Adam's first-moment decay is optimizer.beta1)" : " (SGD takes lr, momentum and weight_decay)"));
    }
    if (o["lr"]) oc.lr = number(o["lr"], where, "optimizer.lr", 0, 100);
    if (o["momentum"]) oc.momentum = number(o["momentum"], where, "optimizer.momentum", 0, 1);
    // Adam divides by 1 - beta^t and by sqrt(v) + eps: beta 1 or eps 0 trains on NaN.
    auto below_one = [&](const char* key) {
      const double v = real_in(o[key], where, std::string("optimizer.") + key, 0, 1);
      if (!(v < 1)) throw ConfigError(where + ": field 'optimizer." + key + "': expected a number in [0, 1), got " + describe(o[key]));
      // Kept as an fp32: 0.99999999 is 1.0f there, and Adam divides by 1 - beta^t.
      if (!(float(v) < 1))
        throw ConfigError(where + ": field 'optimizer." + key + "': " + describe(o[key]) +
                          " is 1 in fp32, which keeps it; the largest fp32 below 1 is 0.99999994");
      return float(v);
    };
    if (o["beta1"]) oc.beta1 = below_one("beta1");
    if (o["beta2"]) oc.beta2 = below_one("beta2");
    if (o["eps"]) {
      oc.eps = number(o["eps"], where, "optimizer.eps", 0, 1);
      if (!(oc.eps > 0)) throw ConfigError(where + ": field 'optimizer.eps': expected a number in (0, 1], got " + describe(o["eps"]));
    }
    if (o["weight_decay"]) oc.weight_decay = number(o["weight_decay"], where, "optimizer.weight_decay", 0, 1);
  }
  bool encoding_given = false;
  if (YAML::Node w = root["weights"]) {
    if (w.IsMap() && w["sparsity"])
      throw ConfigError(where + ": field 'weights.sparsity' has moved: write a top-level 'sparsity:' block "
                        "(sparsity, init_method, seed, param_name_patterns), see docs/sparsity.md");
    check_keys(w, where, "weights", {"encoding", "seed"});
    if (w["encoding"]) {
      std::string e = scalar<std::string>(w["encoding"], where, "weights.encoding", "dense or sparse");
      if (e != "dense" && e != "sparse") throw ConfigError(where + ": field 'weights.encoding': expected dense or sparse, got '" + e + "'");
      t.memoryx.encoding = e == "dense" ? StreamEncoding::Dense : StreamEncoding::Sparse;
      encoding_given = true;
    }
    if (w["seed"]) t.memoryx.seed = integer_in(w["seed"], where, "weights.seed", 0, UINT64_MAX);
  }
  if (YAML::Node sp = root["sparsity"]) load_sparsity(t.memoryx.sparsity, sp, where);
  // The swarmx and memoryx blocks override the machine's cluster figures for this run.
  if (YAML::Node sx = root["swarmx"]) {
    check_keys(sx, where, "swarmx", {"fanout", "latency_per_level", "bytes_per_cycle_per_link"});
    // A node of one child is no tree: at least two.
    if (sx["fanout"]) machine.swarmx_fanout = uint32_t(integer_in(sx["fanout"], where, "swarmx.fanout", 2, 64));
    if (sx["latency_per_level"])
      machine.swarmx_latency_cycles = uint32_t(positive(sx["latency_per_level"], where, "swarmx.latency_per_level", 1u << 30));
    if (sx["bytes_per_cycle_per_link"])
      machine.swarmx_link_bytes_per_cycle = real_in(sx["bytes_per_cycle_per_link"], where, "swarmx.bytes_per_cycle_per_link", 1e-6, 1e9);
  }
  if (YAML::Node mx = root["memoryx"]) {
    check_keys(mx, where, "memoryx",
               {"bytes_per_cycle", "update_bytes_per_cycle", "lazy_initialization", "optimize_initialization", "max_async_parallel_compute"});
    if (mx["bytes_per_cycle"]) machine.memoryx_bytes_per_cycle = real_in(mx["bytes_per_cycle"], where, "memoryx.bytes_per_cycle", 1e-6, 1e9);
    if (mx["update_bytes_per_cycle"])
      machine.memoryx_update_bytes_per_cycle = real_in(mx["update_bytes_per_cycle"], where, "memoryx.update_bytes_per_cycle", 1e-6, 1e9);
    InitSettings& in = t.memoryx.init;
    if (mx["lazy_initialization"]) in.lazy = scalar<bool>(mx["lazy_initialization"], where, "memoryx.lazy_initialization", "true or false");
    if (mx["optimize_initialization"])
      in.optimize = scalar<bool>(mx["optimize_initialization"], where, "memoryx.optimize_initialization", "true or false");
    if (mx["max_async_parallel_compute"])
      in.max_parallel = uint32_t(positive(mx["max_async_parallel_compute"], where, "memoryx.max_async_parallel_compute", 256));
  }
  if (t.memoryx.sparsity.enabled && !encoding_given)
    t.memoryx.encoding = StreamEncoding::Sparse;  // a sparse model is streamed sparse: zeros are never sent
  if (t.mixed && t.memoryx.encoding == StreamEncoding::Dense)
    t.memoryx.encoding = StreamEncoding::DenseHalf;  // mixed precision: two fp16 weights per wavelet
  t.swarmx = {t.num_csx, machine.swarmx_fanout, machine.swarmx_latency_cycles, machine.swarmx_link_bytes_per_cycle};
  t.memoryx.bytes_per_cycle = machine.memoryx_bytes_per_cycle;
}

}  // namespace

// Every field a machine takes: a preset file gives each (but `preset`), a run config's machine:
// mapping any.
static const std::set<std::string>& machine_field_names() {
  static const std::set<std::string> keys = {
      "name", "preset", "fabric_width", "fabric_height", "sram_bytes_per_pe", "sram_banks", "colours",
      "hop_latency_cycles", "ramp_latency_cycles", "wavelets_per_link_per_cycle", "router_buffer_depth",
      "pe_input_queue_depth", "fmac_simd_fp16", "fmac_simd_mixed", "fmac_simd_fp32", "move_simd_fp32", "move_simd_fp16",
      "fmax_simd_fp16", "fmax_simd_fp32", "convert_simd",
      "dsd_pipeline_cycles", "fabric_dsd_setup_cycles", "data_task_receive_cycles", "local_task_ids", "data_task_ids_shared", "microthreads", "pe_input_queues", "pe_output_queues",
      "pe_output_queue_depth", "pe_filters", "switch_positions", "switch_rx_and_tx", "fabric_inputs_per_op", "clock_hz", "io_bytes_per_cycle",
      "memoryx_bytes_per_cycle", "memoryx_update_bytes_per_cycle", "memoryx_latency_cycles", "swarmx_fanout",
      "swarmx_link_bytes_per_cycle", "swarmx_latency_cycles", "edge_buffer_bytes", "input_bytes_per_cycle", "input_latency_cycles",
      "user_node_latency_cycles"};
  return keys;
}

void apply_machine_fields(MachineSpec& s, const YAML::Node& n, const std::string& where, const std::string& prefix) {
  // A field's name as the user wrote it: `machine.clock_hz` in a run config, `clock_hz` in a preset.
  auto f = [&](const std::string& key) { return prefix + key; };
  const std::set<std::string>& keys = machine_field_names();
  check_keys(n, where, prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1), keys);
  auto u32 = [&](const char* key, uint32_t& out, uint64_t max) {
    if (n[key]) out = uint32_t(positive(n[key], where, f(key), max));
  };
  if (n["name"]) {
    s.name = scalar<std::string>(n["name"], where, f("name"), "a string");
    if (s.name.empty()) throw ConfigError(where + ": field '" + f("name") + "': expected a name, got an empty string");
  }
  u32("fabric_width", s.fabric_width, 1u << 16);
  u32("fabric_height", s.fabric_height, 1u << 16);
  u32("sram_bytes_per_pe", s.sram_bytes_per_pe, 1u << 24);
  u32("sram_banks", s.sram_banks, 1024);
  // The SIMD stride limits (pe/dsd_op.hpp) are the SDK's table for 8 banks, the only count either
  // chip has: another count would be read and silently given that table.
  if (s.sram_banks != 8)
    throw ConfigError(where + ": field '" + f("sram_banks") + "': " + std::to_string(s.sram_banks) +
                      ", but the SIMD stride limits modelled are the SDK's for 8 banks (WSE-2 and WSE-3 both have 8; docs/machine-spec.md)");
  u32("colours", s.colours, MachineSpec::kMaxColours);
  u32("hop_latency_cycles", s.hop_latency_cycles, MachineSpec::kMaxLatency);
  u32("ramp_latency_cycles", s.ramp_latency_cycles, MachineSpec::kMaxLatency);
  u32("wavelets_per_link_per_cycle", s.wavelets_per_link_per_cycle, 1);
  u32("router_buffer_depth", s.router_buffer_depth, MachineSpec::kMaxDepth);
  u32("pe_input_queue_depth", s.pe_input_queue_depth, MachineSpec::kMaxDepth);
  u32("fmac_simd_fp16", s.fmac_simd_fp16, 1024);
  u32("fmac_simd_fp32", s.fmac_simd_fp32, 1024);
  u32("move_simd_fp32", s.move_simd_fp32, 1024);
  u32("fmac_simd_mixed", s.fmac_simd_mixed, 1024);
  u32("move_simd_fp16", s.move_simd_fp16, 1024);
  u32("fmax_simd_fp16", s.fmax_simd_fp16, 1024);
  u32("fmax_simd_fp32", s.fmax_simd_fp32, 1024);
  u32("convert_simd", s.convert_simd, 1024);
  u32("dsd_pipeline_cycles", s.dsd_pipeline_cycles, MachineSpec::kMaxLatency);
  if (n["fabric_dsd_setup_cycles"])
    s.fabric_dsd_setup_cycles = uint32_t(count(n["fabric_dsd_setup_cycles"], where, f("fabric_dsd_setup_cycles"), 1000));
  u32("data_task_receive_cycles", s.data_task_receive_cycles, MachineSpec::kMaxLatency);  // a task runs a cycle after its wavelet at the soonest
  u32("local_task_ids", s.local_task_ids, 32);  // (a PE keeps its local tasks in a 32-bit mask)
  if (n["data_task_ids_shared"])
    s.data_task_ids_shared = scalar<bool>(n["data_task_ids_shared"], where, f("data_task_ids_shared"), "true or false");
  u32("microthreads", s.microthreads, MachineSpec::kMaxMicrothreads);
  u32("pe_input_queues", s.pe_input_queues, MachineSpec::kMaxColours);
  u32("pe_output_queues", s.pe_output_queues, MachineSpec::kMaxColours);
  u32("pe_output_queue_depth", s.pe_output_queue_depth, MachineSpec::kMaxDepth);
  if (n["pe_filters"]) s.pe_filters = uint32_t(count(n["pe_filters"], where, f("pe_filters"), MachineSpec::kMaxColours));
  u32("switch_positions", s.switch_positions, MachineSpec::kMaxSwitchPositions);
  if (n["switch_rx_and_tx"]) s.switch_rx_and_tx = scalar<bool>(n["switch_rx_and_tx"], where, f("switch_rx_and_tx"), "true or false");
  if (n["fabric_inputs_per_op"]) s.fabric_inputs_per_op = uint32_t(integer_in(n["fabric_inputs_per_op"], where, f("fabric_inputs_per_op"), 1, 2));
  if (s.pe_output_queue_depth + s.dsd_pipeline_cycles > 16)
    throw ConfigError(where + ": fields '" + f("pe_output_queue_depth") + "' + '" + f("dsd_pipeline_cycles") + "' exceed the 16 wavelets an output queue "
                      "is modelled with (got " + std::to_string(s.pe_output_queue_depth) + " + " + std::to_string(s.dsd_pipeline_cycles) + ")");
  if (n["clock_hz"]) {
    // 1 Hz to 1 THz: a clock of 1e-320 Hz printed "inf us at 0 MHz" and made the projected seconds
    // null; 1e300 a 300-digit figure.
    s.clock_hz = real_in(n["clock_hz"], where, f("clock_hz"), 1, 1e12);
  }
  if (n["io_bytes_per_cycle"]) {
    s.io_bytes_per_cycle = scalar<double>(n["io_bytes_per_cycle"], where, f("io_bytes_per_cycle"), "a number >= 0");
    // Below 1e-9 bytes a cycle (a wavelet every 2^32 cycles) an edge port's rate, a fraction of
    // 64-bit integers, is no longer exact to 2^-30: 3e-17 gave 1.7% more cycles than it should.
    if (!(s.io_bytes_per_cycle == 0 || (s.io_bytes_per_cycle >= 1e-9 && std::isfinite(s.io_bytes_per_cycle))))
      throw ConfigError(where + ": field '" + f("io_bytes_per_cycle") + "': expected 0 (unlimited) or a number from 1e-9, got " +
                        describe(n["io_bytes_per_cycle"]));
  }
  // The cluster: rates > 0 (a link that never delivers would stall the run), latencies >= 1 cycle.
  // The same range as the run config's swarmx: and memoryx: blocks give these rates.
  auto rate = [&](const char* key, double& out) {
    if (n[key]) out = real_in(n[key], where, f(key), 1e-6, 1e9);
  };
  rate("memoryx_bytes_per_cycle", s.memoryx_bytes_per_cycle);
  rate("memoryx_update_bytes_per_cycle", s.memoryx_update_bytes_per_cycle);
  rate("swarmx_link_bytes_per_cycle", s.swarmx_link_bytes_per_cycle);
  rate("input_bytes_per_cycle", s.input_bytes_per_cycle);
  u32("memoryx_latency_cycles", s.memoryx_latency_cycles, 1u << 30);
  u32("swarmx_latency_cycles", s.swarmx_latency_cycles, 1u << 30);
  u32("input_latency_cycles", s.input_latency_cycles, 1u << 30);
  u32("user_node_latency_cycles", s.user_node_latency_cycles, 1u << 30);
  if (n["swarmx_fanout"]) s.swarmx_fanout = uint32_t(integer_in(n["swarmx_fanout"], where, f("swarmx_fanout"), 2, 64));
  if (n["edge_buffer_bytes"]) s.edge_buffer_bytes = count(n["edge_buffer_bytes"], where, f("edge_buffer_bytes"), uint64_t(1) << 40);
}

namespace {

// Any YAML exception the checks above did not turn into a message of their own (a conversion
// yaml-cpp refuses in a way not foreseen) is still the file's fault: name it.
template <class Fn>
auto naming(const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": " + e.what());
  }
}

}  // namespace

MachineSpec load_machine(const std::string& name_or_path) {
  std::filesystem::path path = name_or_path;
  if (path.extension() != ".yaml" && path.extension() != ".yml") path = machines_dir() / (name_or_path + ".yaml");
  std::error_code ec;  // a name the OS cannot even look up (too long, say) is just not a preset
  if (!std::filesystem::exists(path, ec))
  {
    // A link loop, or a folder on the way that may not be searched: there, but not readable.
    if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR && ec.value() != ENAMETOOLONG)
      throw ConfigError("machine preset '" + shown_brief(name_or_path) + "': cannot look up " + shown_brief(path.string()) + ": " + ec.message());
    // The presets that are there, and where they were looked for (WSE_MACHINES_DIR moves it).
    std::vector<std::string> names;
    for (std::filesystem::directory_iterator it(machines_dir(), ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code there;
      if (it->path().extension() == ".yaml" && it->exists(there)) names.push_back(it->path().stem().string());
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    if (list.empty()) {  // none: say why, when the folder itself is the trouble
      std::error_code dec;
      const auto dst = std::filesystem::status(machines_dir(), dec);
      list = !std::filesystem::exists(dst) ? "none (no such folder)" : !std::filesystem::is_directory(dst) ? "none (not a folder)" : "none";
    }
    throw ConfigError("machine preset '" + shown_brief(name_or_path) + "' not found (looked for " + shown_brief(path.string(), 200) + "; presets in " +
                      machines_dir().string() + (std::getenv("WSE_MACHINES_DIR") && *std::getenv("WSE_MACHINES_DIR") ? ", from WSE_MACHINES_DIR" : "") + ": " +
                      list + ")");
  }
  const std::string where = "machine preset " + path.string();
  return naming(where, [&] {
    MachineSpec spec;
    const YAML::Node n = load_yaml(path, "machine preset");
    apply_machine_fields(spec, n, where);
    // A preset file gives every figure: one it left out took WSE-2's silently (a WSE-3 file
    // without its fabric size placed on 750 x 994, one without its name ran as "wse2"), and
    // `preset:`, which only a run config's machine: mapping reads, was taken and ignored.
    if (n["preset"])
      throw ConfigError(where + ": field 'preset': a preset file gives every figure itself; 'preset' names the base of a run "
                        "config's machine: mapping ({preset: wse3, KEY: VALUE})");
    std::string missing;
    for (const std::string& key : machine_field_names())
      if (key != "preset" && !n[key]) missing += (missing.empty() ? "" : ", ") + key;
    if (!missing.empty())
      throw ConfigError(where + ": misses " + missing + " (a preset file gives every figure; start from a copy of machines/wse2.yaml "
                        "or wse3.yaml, or override a few in a run config's machine: {preset: NAME, KEY: VALUE})");
    return spec;
  });
}

static RunConfig load_run_config_checked(const std::filesystem::path& path, const std::string& where);

RunConfig load_run_config(const std::filesystem::path& path) {
  const std::string where = "config " + path.string();
  return naming(where, [&] { return load_run_config_checked(path, where); });
}

static RunConfig load_run_config_checked(const std::filesystem::path& path, const std::string& where) {
  YAML::Node root = load_yaml(path, "config");
  if (!root.IsMap()) throw ConfigError(where + ": expected a mapping at the top level");
  std::set<std::string> keys = {"machine", "mesh", "kernel", "run", "model", "data", "training", "optimizer", "weights", "sparsity",
                                 "swarmx", "memoryx"};
  for (const KernelKind& k : kernel_kinds())
    if (!k.block.empty()) keys.insert(k.block);  // each kernel's own block
  check_keys(root, where, "", keys);
  RunConfig cfg;
  cfg.source = path;

  YAML::Node m = root["machine"];
  if (!m || m.IsScalar()) {
    cfg.machine = load_machine(m ? m.Scalar() : "wse2");
  } else if (m.IsMap()) {
    std::string preset = m["preset"] ? scalar<std::string>(m["preset"], where, "machine.preset", "a preset name") : "wse2";
    cfg.machine = load_machine(preset);
    apply_machine_fields(cfg.machine, m, where, "machine.");
  } else {
    throw ConfigError(where + ": field 'machine': expected a preset name or a mapping, got " + describe(m));
  }

  cfg.mesh = {cfg.machine.fabric_width, cfg.machine.fabric_height};
  if (YAML::Node mesh = root["mesh"]) {
    check_keys(mesh, where, "mesh", {"width", "height"});
    if (mesh["width"]) cfg.mesh.width = uint32_t(positive(mesh["width"], where, "mesh.width", cfg.machine.fabric_width));
    if (mesh["height"])
      cfg.mesh.height = uint32_t(positive(mesh["height"], where, "mesh.height", cfg.machine.fabric_height));
  }

  if (root["kernel"]) cfg.kernel = scalar<std::string>(root["kernel"], where, "kernel", "a kernel name");
  // The kernel parses its own block (kernels/registry.cpp); training kernels take the training keys.
  const KernelKind& kind = kernel_kind(cfg.kernel, where);
  if (kind.training) load_train_fields(cfg.train, cfg.machine, root, where);
  else cfg.kernel_config = kind.parse(root[kind.block], KernelContext{where, cfg.machine, cfg.mesh});

  if (YAML::Node run = root["run"]) {
    check_keys(run, where, "run", {"max_cycles"});
    if (run["max_cycles"]) cfg.max_cycles = positive(run["max_cycles"], where, "run.max_cycles", kMaxRunCycles);
  }
  return cfg;
}

ClusterConfig cluster_config(const RunConfig& cfg) {
  const TrainConfig& t = cfg.train;
  ClusterConfig c;
  c.model = {t.layers, t.batch_size, t.num_csx, t.mixed, t.loss_scale, t.memoryx.encoding, "config " + cfg.source.string()};
  c.mesh = cfg.mesh;
  c.machine = cfg.machine;
  c.memoryx = t.memoryx;
  c.resume_from = t.resume_from;
  c.retain_last_layer = t.retain_last_layer;
  c.detail = t.detail;
  c.max_cycles = cfg.max_cycles;
  return c;
}

}  // namespace wse
