#include "host/fc_programs.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "pe/pe.hpp"

namespace wse {

namespace {

constexpr uint8_t kDwDriverTask = 1;

FcVars& vars(PeContext& ctx) { return *ctx.at<FcVars>(0u); }
float* f32(PeContext& ctx, uint32_t off) { return ctx.at<float>(off); }
bool east_most(const FcVars& v) { return v.col + 1 == v.q; }

// ---- the partial-sum chain east (forward y, backward dx) ----

// The east-most PE has the full sums in `acc`: finish the layer (forward) or the dX (backward).
void finish_row(PeContext& ctx, FcVars& v);

void own_stream_done(PeContext& ctx, FcVars& v) {
  v.weights_done = 1;
  float* acc = f32(ctx, v.acc);
  if (v.col == 0) {  // the chain starts here
    if (east_most(v)) finish_row(ctx, v);
    else ctx.send(chain_colour(v.col), acc, v.chain_total);
    return;
  }
  // Elements that arrived before this PE's own weights ended: add them in one vector op.
  if (v.stash_n) {
    ctx.add(acc, f32(ctx, v.stash), v.stash_n);
    if (!east_most(v)) {
      ctx.send(chain_colour(v.col), acc, v.stash_n);
    } else if ((v.chain_done += v.stash_n) == v.chain_total) {
      finish_row(ctx, v);
    }
  }
}

// Chain elements arrive in order; those that come before this PE's own weights are done wait in
// the stash (they would otherwise be passed on without this PE's share).
void on_chain(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  const uint32_t e = v.chain_arrived++;
  ctx.elementwise(1);
  if (!v.weights_done) {
    f32(ctx, v.stash)[e] = w.as_f32();
    v.stash_n = e + 1;
    return;
  }
  float* acc = f32(ctx, v.acc);
  acc[e] += w.as_f32();
  if (!east_most(v)) ctx.send(chain_colour(v.col), acc + e, 1);
  else if (++v.chain_done == v.chain_total) finish_row(ctx, v);
}

// ---- weights ----

void on_weight(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  if (!v.have_header) {
    v.have_header = 1;
    v.w_expected = w.payload;
    v.w_seen = 0;
    if (v.w_expected == 0) own_stream_done(ctx, v);
    return;
  }
  uint32_t pos;
  float value;
  if (v.sparse) {
    pos = w.sparse_index();
    value = float(w.sparse_value());
  } else {
    pos = v.w_seen;
    value = w.as_f32();
  }
  float* acc = f32(ctx, v.acc);
  if (!v.backward) {
    // Row k0 + pos / n_out of W, output column pos % n_out: y[:, n] += w * x[:, k].
    const uint32_t kk = pos / v.n_out, n = pos % v.n_out;
    ctx.fmac(acc + size_t(n) * v.br, f32(ctx, v.x_cm) + size_t(kk) * v.br, value, v.br);
  } else {
    // Column n0 + pos / k_in of W, row pos % k_in: dx[:, k] += w * dz[:, n].
    const uint32_t n = v.n0 + pos / v.k_in, k = pos % v.k_in;
    ctx.fmac(acc + size_t(k) * v.br, f32(ctx, v.dz) + size_t(n) * v.br, value, v.br);
  }
  if (++v.w_seen == v.w_expected) own_stream_done(ctx, v);
}

// ---- the east-most PE and the broadcast west ----

void keep_slice(PeContext& ctx, FcVars& v, uint32_t e, float value) {
  const uint32_t n = e / v.br, b = e % v.br;
  if (n < v.n0 || n >= v.n0 + v.ns) return;
  f32(ctx, v.out_cm)[size_t(n - v.n0) * v.br + b] = value;
  f32(ctx, v.out_rm)[size_t(b) * v.out_ks + (n - v.n0)] = value;
  ctx.elementwise(2);
}

void finish_row(PeContext& ctx, FcVars& v) {
  float* full = f32(ctx, v.acc);
  const uint32_t total = v.chain_total;
  if (v.backward) {
    // dZ of the layer below = dX masked by where its ReLU was active.
    const float* a = f32(ctx, v.act_prev);
    float* dz = f32(ctx, v.dz_prev);
    for (uint32_t e = 0; e < total; ++e) dz[e] = a[e] > 0.0f ? full[e] : 0.0f;
    ctx.elementwise(total);
    if (v.q > 1) ctx.send(kBroadcastColour, dz, total);
    return;
  }
  if (!v.last_layer) {
    float* a = f32(ctx, v.act);
    for (uint32_t e = 0; e < total; ++e) a[e] = full[e] > 0.0f ? full[e] : 0.0f;
    ctx.elementwise(total);
    for (uint32_t e = 0; e < total; ++e) keep_slice(ctx, v, e, a[e]);
    if (v.q > 1) ctx.send(kBroadcastColour, a, total);
    return;
  }
  // Softmax cross-entropy per batch row; dZ = (softmax - onehot) / global batch.
  float* dz = f32(ctx, v.dz);
  const uint32_t* labels = ctx.at<uint32_t>(v.labels);
  float* out = f32(ctx, v.act);  // per row: loss, predicted class
  for (uint32_t b = 0; b < v.br; ++b) {
    float m = full[b];
    uint32_t arg = 0;
    for (uint32_t n = 1; n < v.n_out; ++n)
      if (full[n * v.br + b] > m) m = full[n * v.br + b], arg = n;
    double sum = 0;
    for (uint32_t n = 0; n < v.n_out; ++n) sum += std::exp(double(full[n * v.br + b] - m));
    const double log_sum = std::log(sum) + m;
    for (uint32_t n = 0; n < v.n_out; ++n) {
      double p = std::exp(double(full[n * v.br + b]) - log_sum);
      dz[n * v.br + b] = float((p - (n == labels[b] ? 1.0 : 0.0)) / double(v.global_batch));
    }
    out[2 * b] = float(log_sum - double(full[labels[b] * v.br + b]));
    reinterpret_cast<uint32_t*>(out)[2 * b + 1] = arg;
  }
  ctx.elementwise(4 * total);
  ctx.send(kLossColour, out, 2 * v.br);
  if (v.q > 1) ctx.send(kBroadcastColour, dz, total);
}

void on_broadcast(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  const uint32_t e = v.bcast_seen++;
  if (v.backward) {
    f32(ctx, v.dz_prev)[e] = w.as_f32();
    ctx.elementwise(1);
  } else if (v.last_layer) {
    f32(ctx, v.dz)[e] = w.as_f32();
    ctx.elementwise(1);
  } else {
    keep_slice(ctx, v, e, w.as_f32());
  }
}

// ---- dW down the columns ----

// dw_own = sum over batch rows of x[b, K-slice] * dz[b, n].
void own_dw(PeContext& ctx, FcVars& v) {
  float* dw = f32(ctx, v.dw_own);
  std::memset(dw, 0, size_t(v.ks) * 4);
  ctx.elementwise(v.ks);
  const float* x = f32(ctx, v.x_rm);
  const float* dz = f32(ctx, v.dz) + size_t(v.dw_n) * v.br;
  for (uint32_t b = 0; b < v.br; ++b) ctx.fmac(dw, x + size_t(b) * v.ks, dz[b], v.ks);
}

void dw_driver(PeContext& ctx) {  // top row: one output column n per activation
  FcVars& v = vars(ctx);
  if (v.ks == 0 || v.dw_n == v.n_out) return;
  own_dw(ctx, v);
  ctx.send(dw_colour(v.row), f32(ctx, v.dw_own), v.ks);
  if (++v.dw_n < v.n_out) ctx.activate(kDwDriverTask);
}

void on_dw(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  f32(ctx, v.dw_in)[v.dw_seen++] = w.as_f32();
  ctx.elementwise(1);
  if (v.dw_seen < v.ks) return;
  v.dw_seen = 0;
  own_dw(ctx, v);
  ctx.add(f32(ctx, v.dw_own), f32(ctx, v.dw_in), v.ks);
  ctx.send(dw_colour(v.row), f32(ctx, v.dw_own), v.ks);
  ++v.dw_n;
}

void backward_start(PeContext& ctx) {
  FcVars& v = vars(ctx);
  if (v.row == 0) dw_driver(ctx);
}

Program make_forward() {
  Program p;
  p.name = "fc_forward";
  p.on(kWeightColour, on_weight).on(1, on_chain).on(2, on_chain).on(kBroadcastColour, on_broadcast);
  return p;
}

Program make_backward() {
  Program p;
  p.name = "fc_backward";
  p.on(kWeightColour, on_weight).on(1, on_chain).on(2, on_chain).on(kBroadcastColour, on_broadcast);
  p.on(4, on_dw).on(5, on_dw);
  p.start_task = p.local(backward_start);
  if (p.local(dw_driver) != kDwDriverTask) throw std::logic_error("fc_backward: dW driver task id");
  return p;
}

}  // namespace

const Program& fc_forward_program() {
  static const Program p = make_forward();
  return p;
}
const Program& fc_backward_program() {
  static const Program p = make_backward();
  return p;
}

}  // namespace wse
