#include "kernels/fc/fc_functional.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "kernels/fc/fc_wafer.hpp"
#include "pe/dsd_op.hpp"

namespace wse {

namespace {

// The sums below run over one index in order for every element (a weight row, a batch row, an
// output), as the PEs take them. Each keeps a block of kChunk elements' running sums in
// registers over that whole index, where a loop over the elements inside the summed index
// loaded and stored every sum once per term: the same operations on each element in the same
// order (the same bits), the sums no longer going through memory (the functional step was
// bound by those loads and stores).
//
// The two loops are also built for AVX2 (target_clones: the host's CPU picks one at load time),
// twice the lanes of the x86-64 baseline's SSE2 (the functional step 1.07-1.43x faster on this
// host). AVX2 does not bring FMA: each lane still rounds the product, then the sum, so both
// builds give the bits the PEs do.
// Under ThreadSanitizer one build only: the clones' resolver is an ifunc, which the loader runs
// before the sanitizer's runtime is up, and its instrumented code crashed there.
#if defined(__SANITIZE_THREAD__)
#define WSE_AVX2_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WSE_AVX2_CLONES
#endif
#endif
#ifndef WSE_AVX2_CLONES
#define WSE_AVX2_CLONES [[gnu::target_clones("avx2", "default")]]
#endif
constexpr uint32_t kChunk = 32;  // 8 SSE registers of sums: enough independent adds to hide an add's latency

// sums[i] = sums[i] + a[t] * rows[t][i] for t in [0, terms), in order, for i in [0, n); a term
// whose keep byte is 0 is skipped (kAll: every term is kept). a[t] is a[t * a_stride];
// rows[t] is rows + t * row_stride, and keep[t] keep + t * row_stride.
template <bool kAll>
[[gnu::always_inline]] inline void sum_rows(float* sums, uint32_t n, const float* a, size_t a_stride, const float* rows, const uint8_t* keep,
              size_t row_stride, uint32_t terms) {
  uint32_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    float acc[kChunk];
    for (uint32_t j = 0; j < kChunk; ++j) acc[j] = sums[i + j];
    for (uint32_t t = 0; t < terms; ++t) {
      const float av = a[t * a_stride];
      const float* r = rows + t * row_stride + i;
      if constexpr (kAll) {
        for (uint32_t j = 0; j < kChunk; ++j) acc[j] = acc[j] + av * r[j];
      } else {
        const uint8_t* k = keep + t * row_stride + i;
        for (uint32_t j = 0; j < kChunk; ++j) acc[j] = k[j] ? acc[j] + av * r[j] : acc[j];
      }
    }
    for (uint32_t j = 0; j < kChunk; ++j) sums[i + j] = acc[j];
  }
  for (; i < n; ++i) {
    float acc = sums[i];
    for (uint32_t t = 0; t < terms; ++t)
      if (kAll || keep[t * row_stride + i]) acc = acc + a[t * a_stride] * rows[t * row_stride + i];
    sums[i] = acc;
  }
}

// dW's weight row g, the rows' partials chained north to south: for each PE row r in order, its
// partial p[i] = 0 + xg[b] * dz[b][i] over its batch rows b in order, then s[i] = p[i] (r = 0)
// or p[i] + s[i]. dz[b] is dz + b * n; PE row r holds batch rows begin[r] .. begin[r] + size[r].
WSE_AVX2_CLONES void dw_row(float* s, uint32_t n, const float* xg, const float* dz, const uint32_t* begin, const uint32_t* size, uint32_t pe_rows) {
  constexpr uint32_t kBlock = 16;  // two sets of sums (the chain's and the row's) in 8 registers
  uint32_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float chain[kBlock] = {};  // (set by PE row 0: there is always one)
    for (uint32_t r = 0; r < pe_rows; ++r) {
      float part[kBlock];
      for (uint32_t j = 0; j < kBlock; ++j) part[j] = 0.0f;
      for (uint32_t b = begin[r], e = begin[r] + size[r]; b < e; ++b) {
        const float xv = xg[b];
        const float* d = dz + size_t(b) * n + i;
        for (uint32_t j = 0; j < kBlock; ++j) part[j] = part[j] + xv * d[j];
      }
      if (r == 0)
        for (uint32_t j = 0; j < kBlock; ++j) chain[j] = part[j];
      else
        for (uint32_t j = 0; j < kBlock; ++j) chain[j] = part[j] + chain[j];
    }
    for (uint32_t j = 0; j < kBlock; ++j) s[i + j] = chain[j];
  }
  for (; i < n; ++i) {
    float chain = 0.0f;
    for (uint32_t r = 0; r < pe_rows; ++r) {
      float part = 0.0f;
      for (uint32_t b = begin[r], e = begin[r] + size[r]; b < e; ++b) part = part + xg[b] * dz[size_t(b) * n + i];
      chain = r == 0 ? part : part + chain;
    }
    s[i] = chain;
  }
}

WSE_AVX2_CLONES void sum_rows(bool all, float* sums, uint32_t n, const float* a, size_t a_stride, const float* rows, const uint8_t* keep,
              size_t row_stride, uint32_t terms) {
  if (all) sum_rows<true>(sums, n, a, a_stride, rows, keep, row_stride, terms);
  else sum_rows<false>(sums, n, a, a_stride, rows, keep, row_stride, terms);
}

}  // namespace

FcFunctional::FcFunctional(const FcLayout& layout) : layout_(layout) {
  const size_t layers = layout.layer_count();
  x_.resize(layers);
  dz_.resize(layers);
}

float FcFunctional::act(float v) const { return layout_.model().mixed ? round_to_half(v) : v; }

void FcFunctional::load_input(const InputShard& shard) {
  batch_ = shard.rows;
  const uint32_t k = shard.features;
  std::vector<float>& x = x_[0];
  x.assign(size_t(k + 1) * batch_, 1.0f);  // the ones row stays 1
  // The PEs hold the worker's values as they came (fp16 bits in mixed precision, fp32 bits else).
  for (uint32_t b = 0; b < batch_; ++b)
    for (uint32_t f = 0; f < k; ++f) {
      const uint32_t bits = shard.values[size_t(b) * k + f];
      x[size_t(f) * batch_ + b] = shard.half ? half_to_float(uint16_t(bits)) : std::bit_cast<float>(bits);
    }
  labels_.assign(shard.labels.begin(), shard.labels.end());
}

void FcFunctional::unpack(size_t l, const std::vector<DecodedStream>& streams) {
  const uint32_t n_out = layout_.model().layers[l + 1], rows = layout_.model().layers[l] + 1;
  const bool mixed = layout_.model().mixed;
  all_kept_ = true;
  for (const DecodedStream& d : streams) all_kept_ = all_kept_ && d.encoding != StreamEncoding::Sparse && d.weights == (d.slice_end - d.slice_begin) * n_out;
  // Dense streams cover every position of their slices, and the slices cover the layer.
  if (all_kept_) w_.resize(size_t(rows) * n_out);
  else w_.assign(size_t(rows) * n_out, 0.0f), kept_.assign(size_t(rows) * n_out, 0);
  for (const DecodedStream& d : streams) {
    const size_t base = size_t(d.slice_begin) * n_out, end = size_t(d.slice_end) * n_out;
    if (base + d.weights > end && d.encoding != StreamEncoding::Sparse)
      throw std::logic_error("FcFunctional: more weights than the column's slice (checked when decoded)");
    float* w = &w_[base];
    // As the PE's data task reads each wavelet (fc_programs.cpp, for_weights), and as axpy hands
    // the weight to the datapath (fp16 in mixed precision; fp16 streams already are).
    switch (d.encoding) {
      case StreamEncoding::Dense:
        for (uint32_t i = 0; i < d.weights; ++i) {
          const float v = std::bit_cast<float>(d.words[1 + i]);
          w[i] = mixed ? round_to_half(v) : v;
        }
        break;
      case StreamEncoding::DenseHalf:
        for (uint32_t i = 0; i + 1 < d.weights; i += 2) {
          const uint32_t word = d.words[1 + i / 2];
          w[i] = half_to_float(uint16_t(word)), w[i + 1] = half_to_float(uint16_t(word >> 16));
        }
        if (d.weights % 2) w[d.weights - 1] = half_to_float(uint16_t(d.words[1 + d.weights / 2]));
        break;
      case StreamEncoding::Sparse: {
        int64_t prev = -1;
        for (size_t i = 1; i < d.words.size(); ++i) {
          const uint32_t pos = d.words[i] >> 16;
          // The PEs sum in stream order; these loops sum in position order: the same when ascending.
          if (int64_t(pos) <= prev || base + pos >= end) throw std::logic_error("FcFunctional: sparse positions not ascending inside the slice");
          prev = pos;
          w[pos] = half_to_float(uint16_t(d.words[i]));
          kept_[base + pos] = 1;
        }
        break;
      }
    }
    if (!all_kept_ && d.encoding != StreamEncoding::Sparse) std::fill_n(&kept_[base], d.weights, uint8_t(1));
  }
}

void FcFunctional::forward(size_t l, const std::vector<DecodedStream>& streams, double& loss_sum, uint32_t& correct) {
  const FcModel& model = layout_.model();
  const uint32_t n_out = model.layers[l + 1], batch = batch_;
  const bool last = l + 1 == layout_.layer_count();
  unpack(l, streams);
  const std::vector<float>& x = x_[l];
  // Column by column, every batch row at once: each PE of column c sums its K-slice weight by
  // weight in stream order; the columns' partial sums then chain east (s_c = P_c + s_{c-1}).
  // (Each sum depends on its own batch row only, so the PE rows need not be taken apart.)
  std::vector<float> z(size_t(batch) * n_out);  // batch x out: the chain's running sum
  for (size_t c = 0; c < streams.size(); ++c) {
    std::vector<float>& part = c == 0 ? z : p_;
    part.assign(size_t(batch) * n_out, 0.0f);
    const uint32_t g0 = streams[c].slice_begin, terms = streams[c].slice_end - g0;
    // Batch row b: part[b][n] over the slice's weight rows g in order, x[g][b] * w[g][n].
    for (uint32_t b = 0; b < batch; ++b)
      sum_rows(all_kept_, &part[size_t(b) * n_out], n_out, &x[size_t(g0) * batch + b], batch, &w_[size_t(g0) * n_out],
               all_kept_ ? nullptr : &kept_[size_t(g0) * n_out], n_out, terms);
    if (c > 0)
      for (size_t i = 0; i < z.size(); ++i) z[i] = p_[i] + z[i];
  }
  if (!last) {
    std::vector<float>& next = x_[l + 1];
    next.assign(size_t(n_out + 1) * batch, 1.0f);
    for (uint32_t b = 0; b < batch; ++b)
      for (uint32_t n = 0; n < n_out; ++n) next[size_t(n) * batch + b] = act(std::fmax(z[size_t(b) * n_out + n], 0.0f));
    return;
  }
  // Softmax cross-entropy as the east-most PE computes it (fc_programs.cpp, loss_and_dz).
  std::vector<float>& dz = dz_[l];
  dz.assign(size_t(n_out) * batch, 0.0f);
  for (uint32_t b = 0; b < batch; ++b) {
    const float* y = &z[size_t(b) * n_out];
    const uint32_t label = labels_[b];
    float m = y[0];
    uint32_t arg = 0;
    for (uint32_t n = 1; n < n_out; ++n)
      if (y[n] > m) m = y[n], arg = n;
    double sum = 0;
    for (uint32_t n = 0; n < n_out; ++n) sum += std::exp(double(y[n] - m));
    const double log_sum = std::log(sum) + m;
    for (uint32_t n = 0; n < n_out; ++n) {
      const double p = std::exp(double(y[n]) - log_sum);
      dz[size_t(n) * batch + b] = act(float((p - (n == label ? 1.0 : 0.0)) / double(model.batch_size) * model.loss_scale));
    }
    loss_sum += double(float(log_sum - double(y[label])));
    correct += arg == label;
  }
}

void FcFunctional::backward(size_t l, const std::vector<DecodedStream>& streams, std::vector<float>& dw, std::vector<uint32_t>& positions) {
  const FcModel& model = layout_.model();
  const uint32_t n_out = model.layers[l + 1], k_in = model.layers[l], rows = k_in + 1, batch = batch_;
  unpack(l, streams);
  const std::vector<float>& x = x_[l];
  const std::vector<float>& dz = dz_[l];
  // dZ batch-major, so the loops below run along the outputs.
  std::vector<float> dzt(size_t(batch) * n_out);
  for (uint32_t n = 0; n < n_out; ++n)
    for (uint32_t b = 0; b < batch; ++b) dzt[size_t(b) * n_out + n] = dz[size_t(n) * batch + b];

  if (l > 0) {
    // dX[k][b]: over the outputs in stream order (each PE holds all of them for its features).
    wt_.assign(size_t(n_out) * k_in, 0.0f);
    std::vector<uint8_t> kt(all_kept_ ? 0 : size_t(n_out) * k_in);
    for (uint32_t k = 0; k < k_in; ++k)
      for (uint32_t n = 0; n < n_out; ++n) {
        wt_[size_t(n) * k_in + k] = w_[size_t(k) * n_out + n];
        if (!all_kept_) kt[size_t(n) * k_in + k] = kept_[size_t(k) * n_out + n];
      }
    dx_.assign(size_t(batch) * k_in, 0.0f);
    // Batch row b: dX[b][k] over the outputs n in order, dZ[b][n] * w[k][n].
    for (uint32_t b = 0; b < batch; ++b)
      sum_rows(all_kept_, &dx_[size_t(b) * k_in], k_in, &dzt[size_t(b) * n_out], 1, wt_.data(), kt.data(), k_in, n_out);
    // The layer below's dZ: dX where its ReLU was active (this layer's input > 0), rounded.
    std::vector<float>& prev = dz_[l - 1];
    prev.assign(size_t(k_in) * batch, 0.0f);
    for (uint32_t k = 0; k < k_in; ++k)
      for (uint32_t b = 0; b < batch; ++b)
        prev[size_t(k) * batch + b] = act(x[size_t(k) * batch + b] > 0.0f ? dx_[size_t(b) * k_in + k] : 0.0f);
  }

  // dW: each PE row over its batch rows in order, the rows' partials chained north to south
  // (s_r = P_r + s_{r-1}), one weight row at a time so the sums stay in cache.
  // (Every PE row holds at least one batch row: FcLayout checks it.)
  const uint32_t pe_rows = layout_.p();
  std::vector<uint32_t> begin(pe_rows), size(pe_rows);
  for (uint32_t r = 0; r < pe_rows; ++r) begin[r] = layout_.rows().begin(r), size[r] = layout_.rows().size(r);
  s_.resize(size_t(rows) * n_out);
  for (uint32_t g = 0; g < rows; ++g)
    dw_row(&s_[size_t(g) * n_out], n_out, &x[size_t(g) * batch], dzt.data(), begin.data(), size.data(), pe_rows);
  // Out in stream order, column after column, as the south egress delivers them (sized first:
  // a push per weight was a tenth of the step).
  size_t count = 0;
  for (const DecodedStream& d : streams) {
    const uint32_t base = d.slice_begin * n_out, end = d.slice_end * n_out;
    if (all_kept_) count += end - base;
    else
      for (uint32_t i = base; i < end; ++i) count += kept_[i];
  }
  dw.resize(count), positions.resize(count);
  size_t o = 0;
  for (const DecodedStream& d : streams) {
    const uint32_t base = d.slice_begin * n_out, end = d.slice_end * n_out;
    for (uint32_t i = base; i < end; ++i)
      if (all_kept_ || kept_[i]) positions[o] = i, dw[o] = s_[i], ++o;
  }
}

}  // namespace wse
