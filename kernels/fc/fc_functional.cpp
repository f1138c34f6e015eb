#include "kernels/fc/fc_functional.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>

#include "kernels/fc/fc_wafer.hpp"
#include "pe/dsd_op.hpp"

namespace wse {

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
    for (uint32_t g = streams[c].slice_begin; g < streams[c].slice_end; ++g) {
      const float* wr = &w_[size_t(g) * n_out];
      const uint8_t* kr = all_kept_ ? nullptr : kept_.data() + size_t(g) * n_out;
      const float* xg = &x[size_t(g) * batch];
      for (uint32_t b = 0; b < batch; ++b) {
        const float xv = xg[b];
        float* pr = &part[size_t(b) * n_out];
        if (all_kept_)
          for (uint32_t n = 0; n < n_out; ++n) pr[n] = pr[n] + xv * wr[n];
        else
          for (uint32_t n = 0; n < n_out; ++n) pr[n] = kr[n] ? pr[n] + xv * wr[n] : pr[n];
      }
    }
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
    for (uint32_t b = 0; b < batch; ++b) {
      float* a = &dx_[size_t(b) * k_in];
      for (uint32_t n = 0; n < n_out; ++n) {
        const float d = dzt[size_t(b) * n_out + n];
        const float* wr = &wt_[size_t(n) * k_in];
        if (all_kept_)
          for (uint32_t k = 0; k < k_in; ++k) a[k] = a[k] + d * wr[k];
        else {
          const uint8_t* kr = &kt[size_t(n) * k_in];
          for (uint32_t k = 0; k < k_in; ++k) a[k] = kr[k] ? a[k] + d * wr[k] : a[k];
        }
      }
    }
    // The layer below's dZ: dX where its ReLU was active (this layer's input > 0), rounded.
    std::vector<float>& prev = dz_[l - 1];
    prev.assign(size_t(k_in) * batch, 0.0f);
    for (uint32_t k = 0; k < k_in; ++k)
      for (uint32_t b = 0; b < batch; ++b)
        prev[size_t(k) * batch + b] = act(x[size_t(k) * batch + b] > 0.0f ? dx_[size_t(b) * k_in + k] : 0.0f);
  }

  // dW: each PE row over its batch rows in order, the rows' partials chained north to south
  // (s_r = P_r + s_{r-1}), one weight row at a time so the sums stay in cache.
  s_.resize(size_t(rows) * n_out);
  p_.resize(n_out);
  for (uint32_t g = 0; g < rows; ++g) {
    float* sg = &s_[size_t(g) * n_out];
    float* pr = p_.data();
    for (uint32_t r = 0; r < layout_.p(); ++r) {
      const uint32_t b0 = layout_.rows().begin(r), br = layout_.rows().size(r);
      for (uint32_t bb = 0; bb < br; ++bb) {
        const float xv = x[size_t(g) * batch + b0 + bb];
        const float* d = &dzt[size_t(b0 + bb) * n_out];
        if (bb == 0)
          for (uint32_t n = 0; n < n_out; ++n) pr[n] = 0.0f + xv * d[n];
        else
          for (uint32_t n = 0; n < n_out; ++n) pr[n] = pr[n] + xv * d[n];
      }
      if (r == 0)
        for (uint32_t n = 0; n < n_out; ++n) sg[n] = pr[n];
      else
        for (uint32_t n = 0; n < n_out; ++n) sg[n] = pr[n] + sg[n];
    }
  }
  // Out in stream order, column after column, as the south egress delivers them.
  dw.clear(), positions.clear();
  for (const DecodedStream& d : streams) {
    const uint32_t base = d.slice_begin * n_out, end = d.slice_end * n_out;
    for (uint32_t i = base; i < end; ++i)
      if (all_kept_ || kept_[i]) positions.push_back(i), dw.push_back(s_[i]);
  }
}

}  // namespace wse
