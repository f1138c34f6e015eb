#include "host/batch_order.hpp"

#include <algorithm>
#include <numeric>

#include "core/splitmix.hpp"

namespace wse {

BatchOrder::BatchOrder(uint32_t samples, uint32_t batch, bool shuffle, uint64_t seed)
    : samples_(samples), batch_(batch), shuffle_(shuffle), seed_(seed) {}

const std::vector<uint32_t>& BatchOrder::order(uint64_t epoch) {
  if (epoch == epoch_) return order_;
  order_.resize(samples_);
  std::iota(order_.begin(), order_.end(), 0u);
  if (shuffle_) {
    uint64_t state = splitmix64(seed_ ^ splitmix64(epoch + 0x5eed));
    for (uint32_t i = samples_; i > 1; --i) {
      state = splitmix64(state);
      const uint32_t j = uint32_t(state % i);
      std::swap(order_[i - 1], order_[j]);
    }
  }
  epoch_ = epoch;
  return order_;
}

void BatchOrder::gather(const Dataset& d, uint64_t step, float* x, uint8_t* y) {
  const uint32_t per_epoch = steps_per_epoch();
  const std::vector<uint32_t>& o = order(step / per_epoch);
  const uint32_t first = uint32_t(step % per_epoch) * batch_;
  for (uint32_t b = 0; b < batch_; ++b) {
    const uint32_t i = o[first + b];
    std::copy_n(&d.images[size_t(i) * d.features], d.features, x + size_t(b) * d.features);
    y[b] = d.labels[i];
  }
}

}  // namespace wse
