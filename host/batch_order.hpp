#pragma once
// Which training samples each step takes: step s is batch (s mod steps-per-epoch) of epoch
// (s div steps-per-epoch), the samples of an epoch in file order or, with `data.shuffle`, in a
// fresh order per epoch drawn from the seed (Fisher-Yates on splitmix64 of seed and epoch), so
// the same config gives the same batches on the wafer (`wse run`), on the host (`wse baseline`)
// and after a resume.
#include <cstdint>
#include <vector>

#include "host/dataset.hpp"

namespace wse {

class BatchOrder {
 public:
  BatchOrder(uint32_t samples, uint32_t batch, bool shuffle, uint64_t seed);
  uint32_t steps_per_epoch() const { return samples_ / batch_; }
  // Copies the batch of the run's step s (counted from the run's first step: its epochs begin there) into x
  // (batch x features) and y (batch labels).
  void gather(const Dataset& d, uint64_t step, float* x, uint8_t* y);

 private:
  const std::vector<uint32_t>& order(uint64_t epoch);

  uint32_t samples_, batch_;
  bool shuffle_;
  uint64_t seed_;
  uint64_t epoch_ = ~uint64_t(0);
  std::vector<uint32_t> order_;
};

}  // namespace wse
