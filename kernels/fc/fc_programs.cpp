#include "kernels/fc/fc_programs.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "wire/weight_stream.hpp"
#include "pe/dsd_op.hpp"
#include "pe/pe.hpp"

namespace wse {

namespace {

constexpr uint8_t kFinishRow = 1;  // forward, east-most: the row's sums are complete
constexpr uint8_t kKeepSlice = 2;  // forward, mixed: the N-slice arrived, make it fp16
constexpr uint8_t kDwSent = 1;     // backward: a dW block has left

FcVars& vars(PeContext& ctx) { return *ctx.at<FcVars>(0u); }
bool east_most(const FcVars& v) { return v.col + 1 == v.q; }
uint32_t act_bytes(const FcVars& v) { return v.mixed ? 2 : 4; }

// Activations and dZ are fp16 in mixed precision, fp32 otherwise.
float act_read(PeContext& ctx, const FcVars& v, uint32_t off, uint32_t i) {
  if (v.mixed) return half_to_float(ctx.at<uint16_t>(off)[i]);
  return ctx.at<float>(off)[i];
}
void act_write(PeContext& ctx, const FcVars& v, uint32_t off, uint32_t i, float x) {
  if (v.mixed) ctx.at<uint16_t>(off)[i] = float_to_half_bits(x);
  else ctx.at<float>(off)[i] = x;
}
// A move of n activations (memory or fabric; on the fabric one per wavelet).
void act_move(PeContext& ctx, const FcVars& v, Dsd dst, Dsd src, OpOptions o = {}) {
  if (v.mixed) ctx.fmovh(dst, src, o);
  else ctx.fmovs(dst, src, o);
}
Dsd act_mem(const FcVars& v, uint32_t off, uint32_t first, uint32_t n) { return mem1d(off + first * act_bytes(v), n); }
Dsd f32_mem(uint32_t off, uint32_t first, uint32_t n) { return mem1d(off + first * 4, n); }

// acc[row][:] += w * vec[col][:] over the batch rows (fp32 sums; fp16 operands in mixed).
void axpy(PeContext& ctx, const FcVars& v, uint32_t acc, uint32_t row, uint32_t vec, uint32_t col, float w) {
  const Dsd y = f32_mem(acc, row * v.br, v.br);
  if (v.mixed) ctx.fmachs(y, y, act_mem(v, vec, col * v.br, v.br), std::bit_cast<_Float16>(float_to_half_bits(w)));
  else ctx.fmacs(y, y, act_mem(v, vec, col * v.br, v.br), w);
}

// Calls fn(position, value) for each weight a wavelet carries; true once the stream is done.
template <class Fn>
bool for_weights(FcVars& v, Wavelet w, Fn&& fn) {
  if (!v.have_header) {
    v.have_header = 1;
    v.w_expected = w.payload;
    v.w_seen = 0;
    return v.w_expected == 0;
  }
  switch (StreamEncoding(v.encoding)) {
    case StreamEncoding::Dense: fn(v.w_seen++, w.as_f32()); break;
    case StreamEncoding::Sparse: fn(w.sparse_index(), half_to_float(uint16_t(w.payload))), ++v.w_seen; break;
    case StreamEncoding::DenseHalf:
      fn(v.w_seen++, half_to_float(uint16_t(w.payload)));
      if (v.w_seen < v.w_expected) fn(v.w_seen++, half_to_float(uint16_t(w.payload >> 16)));
      break;
  }
  return v.w_seen == v.w_expected;
}

// ---- forward ----

// The partial sums east: the first column sends its own, the others add theirs to the stream
// from the west as it passes; the east-most adds into memory and finishes the row.
void forward_weights_done(PeContext& ctx, FcVars& v) {
  const uint32_t total = v.n_out * v.br;
  const Dsd acc = f32_mem(v.acc, 0, total);
  if (v.q == 1) {
    ctx.activate(kFinishRow);
  } else if (v.col == 0) {
    ctx.fmovs(fabout(chain_colour(v.col), total), acc);
  } else if (east_most(v)) {
    ctx.fadds(acc, acc, fabin(chain_colour(v.col - 1), total));
    ctx.activate(kFinishRow);
  } else {
    ctx.fadds(fabout(chain_colour(v.col), total), acc, fabin(chain_colour(v.col - 1), total));
  }
}

void forward_weight(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  const bool done = for_weights(v, w, [&](uint32_t pos, float value) {
    // Row k0 + pos / n_out of W, output column pos % n_out: y[n][:] += w * x[k][:].
    axpy(ctx, v, v.acc, pos % v.n_out, v.x, pos / v.n_out, value);
  });
  if (done) forward_weights_done(ctx, v);
}

// Softmax cross-entropy per batch row; dZ = (softmax - onehot) / global batch * loss scale.
void loss_and_dz(PeContext& ctx, FcVars& v) {
  const float* y = ctx.at<float>(v.acc);
  const uint32_t* labels = ctx.at<uint32_t>(v.labels);
  float* out = ctx.at<float>(v.out);  // per row: loss, predicted class
  for (uint32_t b = 0; b < v.br; ++b) {
    float m = y[b];
    uint32_t arg = 0;
    for (uint32_t n = 1; n < v.n_out; ++n)
      if (y[n * v.br + b] > m) m = y[n * v.br + b], arg = n;
    double sum = 0;
    for (uint32_t n = 0; n < v.n_out; ++n) sum += std::exp(double(y[n * v.br + b] - m));
    const double log_sum = std::log(sum) + m;
    for (uint32_t n = 0; n < v.n_out; ++n) {
      const double p = std::exp(double(y[n * v.br + b]) - log_sum);
      act_write(ctx, v, v.dz, n * v.br + b, float((p - (n == labels[b] ? 1.0 : 0.0)) / double(v.global_batch) * v.loss_scale));
    }
    out[2 * b] = float(log_sum - double(y[labels[b] * v.br + b]));
    reinterpret_cast<uint32_t*>(out)[2 * b + 1] = arg;
  }
  ctx.elementwise(4 * v.n_out * v.br);
}

void finish_row(PeContext& ctx) {
  FcVars& v = vars(ctx);
  const uint32_t total = v.n_out * v.br;
  const Dsd acc = f32_mem(v.acc, 0, total);
  if (!v.last_layer) {
    ctx.fmaxs(acc, acc, scalar_f32(0.0f));  // ReLU
    // Its own N-slice becomes its next input; the rest goes west (each PE's filter keeps its own).
    const Dsd own = f32_mem(v.acc, v.n0 * v.br, v.ns * v.br);
    if (v.mixed) ctx.fs2h(act_mem(v, v.x_next, 0, v.ns * v.br), own);
    else ctx.fmovs(act_mem(v, v.x_next, 0, v.ns * v.br), own);
    if (v.q > 1) ctx.fmovs(fabout(kBroadcastColour, total), acc);
    return;
  }
  loss_and_dz(ctx, v);
  ctx.fmovs(fabout(kLossColour, 2 * v.br), f32_mem(v.out, 0, 2 * v.br));
  if (v.q > 1) act_move(ctx, v, fabout(kDzColour, total), act_mem(v, v.dz, 0, total));
}

// Every PE but the east-most takes what the east-most broadcasts, on a microthread, while its
// main thread works through the weights.
void forward_start(PeContext& ctx) {
  FcVars& v = vars(ctx);
  if (east_most(v)) {
    // The ones row of the next layer's input (it multiplies that layer's bias).
    if (!v.last_layer) act_move(ctx, v, act_mem(v, v.x_next, v.ns * v.br, v.br), v.mixed ? scalar_f16(1.0f) : scalar_f32(1.0f));
    return;
  }
  if (!v.last_layer) {
    if (!v.ns) return;
    const uint32_t n = v.ns * v.br;
    if (v.mixed) ctx.fmovs(f32_mem(v.stage, 0, n), fabin(kBroadcastColour, n), {.async = true, .activate = TaskRef::local(kKeepSlice)});
    else ctx.fmovs(f32_mem(v.x_next, 0, n), fabin(kBroadcastColour, n), {.async = true});
    return;
  }
  const uint32_t total = v.n_out * v.br;
  act_move(ctx, v, act_mem(v, v.dz, 0, total), fabin(kDzColour, total), {.async = true});
}

void keep_slice(PeContext& ctx) {
  FcVars& v = vars(ctx);
  ctx.fs2h(act_mem(v, v.x_next, 0, v.ns * v.br), f32_mem(v.stage, 0, v.ns * v.br));
}

// ---- backward ----

// Streams dW block `buf` down the column on a microthread: the top row sends its own partial
// sums, every other row adds its own to the block arriving from the row above.
void send_dw_block(PeContext& ctx, FcVars& v, uint32_t buf, uint32_t len) {
  const Dsd block = f32_mem(v.dwp, buf * kDwBlock, len);
  const OpOptions async{.async = true, .activate = TaskRef::local(kDwSent)};
  if (v.row == 0) ctx.fmovs(fabout(dw_colour(v.row), len), block, async);
  else ctx.fadds(fabout(dw_colour(v.row), len), block, fabin(dw_colour(v.row - 1), len), async);
  v.dw_sending = 1;
}

// The current block is full (or the stream ended): send it if the other block has left,
// otherwise hold the weights back until it has.
void dw_block_full(PeContext& ctx, FcVars& v) {
  if (!v.dw_sending) {
    send_dw_block(ctx, v, v.dw_cur, v.dw_fill);
    v.dw_cur ^= 1, v.dw_fill = 0;
    return;
  }
  v.dw_pending = 1, v.dw_pending_len = v.dw_fill;
  ctx.block(TaskRef::data(kWeightColour));
}

void dw_sent(PeContext& ctx) {
  FcVars& v = vars(ctx);
  v.dw_sending = 0;
  if (!v.dw_pending) return;
  v.dw_pending = 0;
  send_dw_block(ctx, v, v.dw_cur, v.dw_pending_len);
  v.dw_cur ^= 1, v.dw_fill = 0;
  ctx.unblock(TaskRef::data(kWeightColour));
}

// dZ of the layer below: this PE's dX slice masked by where that layer's ReLU was active (its
// own input here > 0), then gathered along the row and broadcast west, so every PE has it whole.
void finish_dx(PeContext& ctx, FcVars& v) {
  const uint32_t total = v.k_in * v.br, prefix = v.k0 * v.br, own = v.kn * v.br;
  const float* dx = ctx.at<float>(v.acc);
  for (uint32_t i = 0; i < own; ++i) act_write(ctx, v, v.dz_prev, prefix + i, act_read(ctx, v, v.x, i) > 0.0f ? dx[i] : 0.0f);
  ctx.elementwise(own);
  if (v.q == 1) return;
  const Dsd mine = act_mem(v, v.dz_prev, v.k0 * v.br, own);
  if (v.col == 0) {
    act_move(ctx, v, fabout(chain_colour(v.col), own), mine);
  } else if (!east_most(v)) {
    act_move(ctx, v, fabout(chain_colour(v.col), prefix), fabin(chain_colour(v.col - 1), prefix));
    act_move(ctx, v, fabout(chain_colour(v.col), own), mine);
  } else {
    act_move(ctx, v, act_mem(v, v.dz_prev, 0, prefix), fabin(chain_colour(v.col - 1), prefix));
    act_move(ctx, v, fabout(kDzColour, total), act_mem(v, v.dz_prev, 0, total));
  }
}

void backward_weight(PeContext& ctx, Wavelet w) {
  FcVars& v = vars(ctx);
  const bool done = for_weights(v, w, [&](uint32_t pos, float value) {
    const uint32_t k = pos / v.n_out, n = pos % v.n_out;
    if (v.has_dx && k < v.kn) axpy(ctx, v, v.acc, k, v.dz, n, value);  // dx[k][:] += w dz[n][:]
    // dW[k][n] over this PE's batch rows: sum_b x[k][b] dz[n][b], one element at a time.
    const Dsd p = f32_mem(v.dwp, v.dw_cur * kDwBlock + v.dw_fill, 1);
    for (uint32_t b = 0; b < v.br; ++b) {
      const Dsd a = b ? p : scalar_f32(0.0f);
      const Dsd xb = act_mem(v, v.x, k * v.br + b, 1);
      const float s = act_read(ctx, v, v.dz, n * v.br + b);
      if (v.mixed) ctx.fmachs(p, a, xb, std::bit_cast<_Float16>(float_to_half_bits(s)));
      else ctx.fmacs(p, a, xb, s);
    }
    if (++v.dw_fill == kDwBlock) dw_block_full(ctx, v);
  });
  if (!done) return;
  v.weights_done = 1;
  if (v.dw_fill) dw_block_full(ctx, v);
  if (v.has_dx) finish_dx(ctx, v);
}

// Every PE but the east-most takes the gathered dZ of the layer below on a microthread.
void backward_start(PeContext& ctx) {
  FcVars& v = vars(ctx);
  if (!v.has_dx || v.q == 1 || east_most(v)) return;
  const uint32_t total = v.k_in * v.br;
  act_move(ctx, v, act_mem(v, v.dz_prev, 0, total), fabin(kDzColour, total), {.async = true});
}

// ---- input ----

void input_start(PeContext& ctx) {
  FcVars& v = vars(ctx);
  const uint32_t n = v.kn * v.br;
  if (n) act_move(ctx, v, act_mem(v, v.x, 0, n), fabin(kInputColour, n));
  if (!east_most(v)) return;
  ctx.fmovs(mem1d(v.labels, v.br), fabin(kInputColour, v.br));  // class labels: a plain copy keeps every bit
  act_move(ctx, v, act_mem(v, v.x, n, v.br), v.mixed ? scalar_f16(1.0f) : scalar_f32(1.0f));
}

Program make_input() {
  Program p;
  p.name = "fc_input";
  p.start_task = p.local(input_start, "start");
  p.block(kInputColour);
  return p;
}

Program make_forward() {
  Program p;
  p.name = "fc_forward";
  p.on(kWeightColour, forward_weight, "weight");
  p.start_task = p.local(forward_start, "start");
  if (p.local(finish_row, "finish_row") != kFinishRow || p.local(keep_slice, "keep_slice") != kKeepSlice)
    throw std::logic_error("fc_forward: task ids");
  p.block(1).block(2).block(kBroadcastColour).block(kDzColour);
  p.microthreads = 1;  // the broadcast's (or the last layer's dZ) receive
  return p;
}

Program make_backward() {
  Program p;
  p.name = "fc_backward";
  p.on(kWeightColour, backward_weight, "weight");
  p.start_task = p.local(backward_start, "start");
  if (p.local(dw_sent, "dw_sent") != kDwSent) throw std::logic_error("fc_backward: task ids");
  p.block(1).block(2).block(4).block(5).block(kDzColour);
  p.microthreads = 2;  // the dZ receive from the start task, and one dW block's send at a time
  return p;
}

}  // namespace

const Program& fc_input_program() {
  static const Program p = make_input();
  return p;
}
const Program& fc_forward_program() {
  static const Program p = make_forward();
  return p;
}
const Program& fc_backward_program() {
  static const Program p = make_backward();
  return p;
}

}  // namespace wse
