#include "kernels/reduce/reduce.hpp"

#include <bit>
#include <cstring>

#include "core/splitmix.hpp"
#include "core/errors.hpp"
#include "pe/pe.hpp"

namespace wse {

namespace {

// The program's variables, at SRAM offset 0 of every PE of the row.
struct ReduceVars {
  uint32_t data;        // byte offset of the N values
  uint32_t n;
  uint32_t x, width;
  uint32_t receives;    // vectors this PE receives (tree: trailing ones of rev; chain: 0 or 1)
  uint8_t recv, send;   // its colours
  uint8_t tree;
  uint8_t control;      // tree: the last sender into its receiver, which it advances with a control wavelet
  uint64_t done_cycle;  // PE 0: when its last op finished
  uint32_t done;
};

constexpr uint8_t kDoneTask = 1;

ReduceVars& vars(PeContext& ctx) { return *ctx.at<ReduceVars>(0u); }

void reduce_task(PeContext& ctx) {
  ReduceVars& v = vars(ctx);
  const Dsd data = mem1d(v.data, v.n);
  if (v.x == 0) {
    for (uint32_t k = 0; k < v.receives; ++k) ctx.fadds(data, data, fabin(v.recv, v.n));
    ctx.activate(kDoneTask);
    return;
  }
  // Every PE but the first sends west once, its last receive fused into the send.
  for (uint32_t k = 0; k + 1 < v.receives; ++k) ctx.fadds(data, data, fabin(v.recv, v.n));
  const Dsd out = fabout(v.send, v.n, {.advance_switch = v.tree && !v.control});
  if (v.receives) ctx.fadds(out, data, fabin(v.recv, v.n));
  else ctx.fmovs(out, data);
  if (v.control) ctx.send_control(v.send, control_payload(SwitchCommand::Advance, true));
}

void done_task(PeContext& ctx) { vars(ctx).done_cycle = ctx.now(), vars(ctx).done = 1; }

uint32_t trailing_ones(uint32_t r) { return uint32_t(std::countr_one(r)); }

}  // namespace

float ReduceKernel::value(uint32_t x, uint32_t i) const {
  const uint64_t h = splitmix64(splitmix64(cfg_.seed ^ (uint64_t(x) << 32)) + i);
  return float(int64_t(h >> 40) - (int64_t(1) << 23)) / float(1 << 23);  // [-1, 1)
}

std::vector<float> ReduceKernel::values(uint32_t x) const {
  std::vector<float> v(cfg_.elements);
  for (uint32_t i = 0; i < cfg_.elements; ++i) v[i] = value(x, i);
  return v;
}

ReduceKernel::ReduceKernel(Wafer& wafer, const ReduceConfig& cfg) : wafer_(wafer), cfg_(cfg) {
  width_ = wafer.shape().width;
  const bool tree = cfg.algorithm == "tree";
  if (!tree && cfg.algorithm != "chain")
    throw ConfigError("reduce: unknown algorithm '" + cfg.algorithm + "' (known: chain, tree)");
  if (tree && !std::has_single_bit(width_))
    throw ConfigError("reduce: the tree reduce needs a power-of-two row width (mesh.width), got " + std::to_string(width_));
  const uint64_t sram = wafer.spec().sram_bytes_per_pe;
  if (cfg.elements > max_elements(sram))
    throw ConfigError("field 'reduce.elements': " + std::to_string(cfg.elements) + " fp32 values per PE and the kernel's " +
                      std::to_string(Sram::placed(sizeof(ReduceVars))) + " bytes of its own do not fit " + std::to_string(sram) +
                      " bytes of SRAM (at most " + std::to_string(max_elements(sram)) + " on this machine)");

  program_.name = std::string("reduce_") + cfg.algorithm;
  program_.start_task = program_.local(reduce_task, "reduce");
  if (program_.local(done_task, "done") != kDoneTask) throw std::logic_error("reduce: done task id");
  program_.block(kColourA).block(kColourB);

  Mesh& mesh = wafer.mesh();
  const uint32_t last = width_ - 1;
  for (uint32_t x = 0; x < width_; ++x) {
    const uint32_t rev = last - x;
    // Colours alternate: by column (chain), by the parity of x's bit count (tree).
    const bool odd = tree ? (std::popcount(x) & 1) : (x & 1);
    const Colour recv = odd ? kColourB : kColourA, send = odd ? kColourA : kColourB;
    uint32_t receives = 0;
    bool control = false;
    if (!tree) {
      receives = x < last ? 1 : 0;
    } else if (x == 0) {
      receives = uint32_t(std::popcount(rev));
    } else {
      const uint32_t t = trailing_ones(rev);
      receives = t;
      const uint64_t next = uint64_t(2) << t;  // the bit above the one this PE's send sets
      control = next <= width_ && !(rev & next);
    }
    if (x < last) {  // receive from the east
      const bool relay = tree && receives == 0;
      mesh.set_route({x, 0}, recv, Route::make(Dir::East, {relay ? Dir::West : Dir::Ramp}));
      if (tree && x > 0) mesh.set_switch({x, 0}, recv, ColourSwitchConfig{}.then(SwitchPosition::transmit({Dir::West})));
    }
    if (tree && x == 0 && width_ > 1)  // where PE 1's relay of its unused colour ends: nothing ever arrives
      mesh.set_route({x, 0}, send, Route::make(Dir::East, {Dir::Ramp}));
    if (x > 0) {  // send west
      mesh.set_route({x, 0}, send, Route::make(Dir::Ramp, {Dir::West}));
      if (tree && x < last) mesh.set_switch({x, 0}, send, ColourSwitchConfig{}.then(SwitchPosition::receive(Dir::East)));
    }
    wafer.load({x, 0}, &program_);
    SramRef vr = wafer.allocate({x, 0}, "vars", sizeof(ReduceVars));
    SramRef data = wafer.allocate({x, 0}, "data", cfg.elements * 4);
    uint8_t* base = wafer.pe({x, 0}).sram.base();
    ReduceVars v{data.offset, cfg.elements, x, width_, receives, recv, send, uint8_t(tree), uint8_t(control), 0, 0};
    std::memcpy(base + vr.offset, &v, sizeof v);
    const std::vector<float> vals = values(x);
    std::memcpy(base + data.offset, vals.data(), vals.size() * 4);
  }
  start_ = wafer.clock();
}

std::vector<float> ReduceKernel::result() const {
  const Pe& pe = wafer_.pe({0, 0});
  const auto* v = reinterpret_cast<const ReduceVars*>(pe.sram.base());
  std::vector<float> out(cfg_.elements);
  std::memcpy(out.data(), pe.sram.base() + v->data, out.size() * 4);
  return out;
}

bool ReduceKernel::finished() const {
  return reinterpret_cast<const ReduceVars*>(wafer_.pe({0, 0}).sram.base())->done != 0;
}

uint32_t ReduceKernel::max_elements(uint64_t sram_bytes) {
  // The two buffers as SRAM places them, each rounded up to 8 bytes (Sram::allocate): its own
  // variables, then the values.
  const uint64_t own = Sram::placed(sizeof(ReduceVars));
  return uint32_t(sram_bytes > own ? (sram_bytes - own) / 8 * 2 : 0);
}

uint64_t ReduceKernel::reduce_cycles() const {
  const auto* v = reinterpret_cast<const ReduceVars*>(wafer_.pe({0, 0}).sram.base());
  return v->done_cycle - start_;
}

uint64_t ReduceKernel::switch_advances() const {
  uint64_t n = 0;
  for (uint32_t x = 0; x < width_; ++x)
    if (const Router* r = wafer_.mesh().router(x))
      for (const LaneExt& e : r->ext) n += e.advances;
  return n;
}

std::vector<float> ReduceKernel::host_sum() const {
  const uint32_t last = width_ - 1;
  if (cfg_.algorithm == "chain") {
    std::vector<float> acc = values(last);
    for (uint32_t x = last; x-- > 0;) {
      const std::vector<float> d = values(x);
      for (uint32_t i = 0; i < cfg_.elements; ++i) acc[i] = d[i] + acc[i];
    }
    return acc;
  }
  // Tree: the vector PE rev sends = its values, plus what it receives from rev - 1, rev - 2,
  // rev - 4, ... in that order.
  std::vector<std::vector<float>> sent(width_);
  for (uint32_t rev = 0; rev < width_; ++rev) {
    std::vector<float> acc = values(last - rev);
    const uint32_t t = rev == last ? uint32_t(std::popcount(rev)) : trailing_ones(rev);
    for (uint32_t k = 0; k < t; ++k) {
      const std::vector<float>& in = sent[rev - (1u << k)];
      for (uint32_t i = 0; i < cfg_.elements; ++i) acc[i] = acc[i] + in[i];
    }
    sent[rev] = std::move(acc);
  }
  return sent[last];
}

std::vector<double> ReduceKernel::exact_sum() const {
  std::vector<double> s(cfg_.elements, 0.0);
  for (uint32_t x = 0; x < width_; ++x) {
    const std::vector<float> d = values(x);
    for (uint32_t i = 0; i < cfg_.elements; ++i) s[i] += double(d[i]);
  }
  return s;
}

}  // namespace wse
