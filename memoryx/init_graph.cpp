#include "memoryx/init_graph.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/splitmix.hpp"

namespace wse {

namespace {

template <class... A>
[[noreturn]] void fail(const A&... a) {
  std::ostringstream s;
  s << "init graph: ";
  (s << ... << a);
  throw std::invalid_argument(s.str());
}

// Element i's raw draw of the op seeded `seed`: counter-based, so any order or thread gives it.
inline uint64_t draw(uint64_t seed, uint64_t i) { return splitmix64(seed ^ splitmix64(i)); }
inline double unit(uint64_t seed, uint64_t i) { return double(draw(seed, i) >> 11) * 0x1.0p-53; }  // [0, 1)

struct Timer {
  double& total;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  ~Timer() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

}  // namespace

InitGraph::InitGraph(uint64_t seed, InitSettings settings) : settings_(settings), rng_state_(seed) {
  if (settings.max_parallel == 0) fail("max_parallel (max_async_parallel_compute) must be >= 1, got 0");
}

InitGraph::Pending& InitGraph::at(size_t t, const char* op) {
  if (t >= tensors_.size()) fail(op, ": unknown tensor id ", t, " (", tensors_.size(), " tensors recorded)");
  if (materialized_) fail(op, " on tensor '", tensors_[t].name, "' after materialize()");
  return tensors_[t];
}

size_t InitGraph::add_tensor(std::string name, std::vector<uint32_t> shape, uint32_t fan_in, uint32_t fan_out) {
  Timer timer{stats_.record_seconds};
  if (materialized_) fail("add_tensor '", name, "' after materialize()");
  Pending p{std::move(name), std::move(shape)};
  p.numel = 1;
  for (uint32_t d : p.shape) p.numel *= d;
  p.fan_in = fan_in, p.fan_out = fan_out;
  if (!settings_.lazy) {  // eager: the CPU model owns a host tensor from the start
    p.host.assign(p.numel, 0.0f);
    stats_.host_bytes += p.numel * sizeof(float);
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.host_bytes);
  }
  tensors_.push_back(std::move(p));
  ++stats_.tensors;
  return tensors_.size() - 1;
}

void InitGraph::record(size_t t, Op op) {
  Pending& p = tensors_[t];
  // The seed is drawn now, in record order, pruned or not: that is what makes every mode agree.
  if (op.kind == Kind::Uniform || op.kind == Kind::Normal || op.kind == Kind::RandomInt) {
    op.seed = splitmix64(rng_state_);
    rng_state_ += 0x9e3779b97f4a7c15ull;
  }
  ++stats_.ops_recorded;
  if (!settings_.lazy) {  // eager: runs now, nothing left to prune
    apply(op, p.host.data(), p.numel);
    ++stats_.ops_executed;
    op.source.reset();
  } else if (settings_.optimize && op.kind != Kind::Scale) {  // every op but scale overwrites it all
    stats_.ops_pruned += p.ops.size() - p.first_live;  // nothing read them
    p.first_live = p.ops.size();
  }
  p.ops.push_back(std::move(op));
}

void InitGraph::fill(size_t t, float value) {
  Timer timer{stats_.record_seconds};
  at(t, "fill");
  record(t, {"fill", Kind::Fill, value});
}

void InitGraph::zero(size_t t) {
  Timer timer{stats_.record_seconds};
  at(t, "zero");
  record(t, {"zero", Kind::Fill, 0.0});
}

void InitGraph::normal(size_t t, double mean, double std) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "normal");
  if (!(std >= 0)) fail("tensor '", p.name, "': normal needs std >= 0, got ", std);
  record(t, {"normal", Kind::Normal, mean, std});
}

void InitGraph::uniform(size_t t, double lo, double hi) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "uniform");
  if (!(lo <= hi)) fail("tensor '", p.name, "': uniform needs lo <= hi, got lo=", lo, " hi=", hi);
  record(t, {"uniform", Kind::Uniform, lo, hi});
}

void InitGraph::random_int(size_t t, int64_t lo, int64_t hi) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "random_int");
  if (lo >= hi) fail("tensor '", p.name, "': random_int needs lo < hi, got lo=", lo, " hi=", hi);
  Op op{"random_int", Kind::RandomInt};
  op.lo = lo, op.span = uint64_t(hi) - uint64_t(lo);
  record(t, std::move(op));
}

double InitGraph::fan(const Pending& p, FanMode mode, const char* op) const {
  const uint32_t f = mode == FanMode::In ? p.fan_in : p.fan_out;
  if (f == 0) fail("tensor '", p.name, "': ", op, " needs ", mode == FanMode::In ? "fan_in" : "fan_out", " > 0, got 0");
  return f;
}

// PyTorch's kaiming_*: gain = sqrt(2 / (1 + a^2)); one sqrt so a = sqrt(5) gives 1/sqrt(fan_in).
void InitGraph::kaiming_uniform(size_t t, double a, FanMode mode) {
  Timer timer{stats_.record_seconds};
  const double bound = std::sqrt(6.0 / ((1 + a * a) * fan(at(t, "kaiming_uniform"), mode, "kaiming_uniform")));
  record(t, {"kaiming_uniform", Kind::Uniform, -bound, bound});
}

void InitGraph::kaiming_normal(size_t t, double a, FanMode mode) {
  Timer timer{stats_.record_seconds};
  const double std = std::sqrt(2.0 / ((1 + a * a) * fan(at(t, "kaiming_normal"), mode, "kaiming_normal")));
  record(t, {"kaiming_normal", Kind::Normal, 0.0, std});
}

void InitGraph::xavier_uniform(size_t t, double gain) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "xavier_uniform");
  if (uint64_t(p.fan_in) + p.fan_out == 0) fail("tensor '", p.name, "': xavier_uniform needs fan_in + fan_out > 0, got 0");
  if (!(gain >= 0)) fail("tensor '", p.name, "': xavier_uniform needs gain >= 0, got ", gain);
  const double bound = gain * std::sqrt(6.0 / (double(p.fan_in) + p.fan_out));
  record(t, {"xavier_uniform", Kind::Uniform, -bound, bound});
}

void InitGraph::xavier_normal(size_t t, double gain) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "xavier_normal");
  if (uint64_t(p.fan_in) + p.fan_out == 0) fail("tensor '", p.name, "': xavier_normal needs fan_in + fan_out > 0, got 0");
  if (!(gain >= 0)) fail("tensor '", p.name, "': xavier_normal needs gain >= 0, got ", gain);
  record(t, {"xavier_normal", Kind::Normal, 0.0, gain * std::sqrt(2.0 / (double(p.fan_in) + p.fan_out))});
}

void InitGraph::scale(size_t t, double factor) {
  Timer timer{stats_.record_seconds};
  at(t, "scale");
  record(t, {"scale", Kind::Scale, factor});
}

void InitGraph::copy_from(size_t t, std::shared_ptr<const std::vector<float>> source) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "copy_from");
  if (!source) fail("tensor '", p.name, "': copy_from got a null source");
  if (source->size() != p.numel)
    fail("tensor '", p.name, "': copy_from source has ", source->size(), " values, expected ", p.numel);
  Op op{"copy_from", Kind::Copy};
  op.source = std::move(source);
  record(t, std::move(op));
}

void InitGraph::load_from(size_t t, std::function<void(float*, size_t)> read) {
  Timer timer{stats_.record_seconds};
  const Pending& p = at(t, "load_from");
  if (!read) fail("tensor '", p.name, "': load_from got no reader");
  Op op{"load_from", Kind::Copy};
  op.read = std::move(read);
  record(t, std::move(op));
}

// One op over a whole tensor. Not inlined, so eager and lazy run the very same instructions.
[[gnu::noinline]] void InitGraph::apply(const Op& op, float* x, size_t n) {
  switch (op.kind) {
    case Kind::Fill:
      std::fill(x, x + n, float(op.a));
      break;
    case Kind::Uniform: {
      // Rounding to float can reach hi; keep the interval half-open.
      const float lo = float(op.a), hi = float(op.b), below_hi = std::nextafter(hi, lo);
      for (size_t i = 0; i < n; ++i) {
        const float v = float(op.a + (op.b - op.a) * unit(op.seed, i));
        x[i] = v < hi || hi <= lo ? v : below_hi;
      }
      break;
    }
    case Kind::Normal:
      // Box-Muller: pair k takes uniforms 2k and 2k+1; the even element gets the cosine, the odd the sine.
      for (size_t i = 0; i < n; i += 2) {
        const double r = op.b * std::sqrt(-2.0 * std::log1p(-unit(op.seed, i)));
        const double th = 2 * std::numbers::pi * unit(op.seed, i + 1);
        x[i] = float(op.a + r * std::cos(th));
        if (i + 1 < n) x[i + 1] = float(op.a + r * std::sin(th));
      }
      break;
    case Kind::RandomInt:
      // lo + floor(draw * span / 2^64): exact for any span, no float rounding at the top.
      for (size_t i = 0; i < n; ++i)
        x[i] = float(int64_t(uint64_t(op.lo) + uint64_t((unsigned __int128)draw(op.seed, i) * op.span >> 64)));
      break;
    case Kind::Scale:
      for (size_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * op.a);
      break;
    case Kind::Copy:
      if (op.read) op.read(x, n);
      else std::copy(op.source->begin(), op.source->end(), x);
      break;
  }
}

std::vector<Tensor> InitGraph::materialize() {
  Timer timer{stats_.materialize_seconds};
  if (materialized_) fail("materialize() called twice");
  materialized_ = true;
  const size_t n = tensors_.size();
  std::vector<Tensor> out(n);
  for (const Pending& p : tensors_) stats_.store_bytes += p.numel * sizeof(float);

  if (!settings_.lazy) {
    // Transfer: the CPU model stays alive until every tensor has been copied, so peak is ~2x.
    for (size_t t = 0; t < n; ++t) out[t] = Tensor{tensors_[t].name, tensors_[t].shape, tensors_[t].host};
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.host_bytes + stats_.store_bytes);
    for (Pending& p : tensors_) std::vector<float>().swap(p.host);
    stats_.host_bytes = 0;
    stats_.max_in_flight = n ? 1 : 0;
    return out;
  }

  // Lazy: each tensor's live chain is an independent task writing straight into its store tensor.
  std::atomic<size_t> next{0};
  std::atomic<uint32_t> in_flight{0}, max_in_flight{0};
  std::atomic<uint64_t> executed{0};
  std::vector<std::exception_ptr> errors(n);
  auto task = [&](size_t t) {
    const uint32_t now = in_flight.fetch_add(1) + 1;
    for (uint32_t seen = max_in_flight.load(); seen < now && !max_in_flight.compare_exchange_weak(seen, now);) {}
    try {
      if (on_task_start_) on_task_start_(t);
      Pending& p = tensors_[t];
      Tensor w{p.name, p.shape, std::vector<float>(p.numel)};
      for (size_t k = p.first_live; k < p.ops.size(); ++k) {
        apply(p.ops[k], w.data.data(), p.numel);
        p.ops[k].source.reset();  // a consumed checkpoint buffer can go
      }
      executed.fetch_add(p.ops.size() - p.first_live);
      out[t] = std::move(w);
    } catch (...) {
      errors[t] = std::current_exception();
    }
    in_flight.fetch_sub(1);
  };
  auto worker = [&] {
    for (size_t t; (t = next.fetch_add(1)) < n;) task(t);
  };
  {
    // The calling thread is one of the max_parallel workers.
    std::vector<std::jthread> helpers;
    for (size_t w = 1; w < std::min<size_t>(settings_.max_parallel, n); ++w) helpers.emplace_back(worker);
    worker();
  }
  stats_.ops_executed += executed.load();
  stats_.max_in_flight = max_in_flight.load();
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.store_bytes);  // the graph itself holds no tensor data
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

std::vector<std::string> InitGraph::planned_ops(size_t t) const {
  if (t >= tensors_.size()) fail("planned_ops: unknown tensor id ", t, " (", tensors_.size(), " tensors recorded)");
  const Pending& p = tensors_[t];
  std::vector<std::string> names;
  for (size_t k = p.first_live; k < p.ops.size(); ++k) names.emplace_back(p.ops[k].name);
  return names;
}

}  // namespace wse
