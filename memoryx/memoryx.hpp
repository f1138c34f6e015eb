#pragma once
// MemoryX: holds every weight and its optimizer state off the wafer, streams a layer's weights
// for the forward and again for the backward pass, applies the reduced gradients, and writes and
// reads checkpoints. It knows layers and tensors, never mesh coordinates: a stream is cut into
// slices the caller names.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "memoryx/optimizer.hpp"
#include "memoryx/safetensors.hpp"
#include "memoryx/tensor.hpp"
#include "memoryx/weight_stream.hpp"

namespace wse {

struct LayerSpec {
  std::string name;
  uint32_t in = 0, out = 0;
};

struct MemoryXConfig {
  OptimizerConfig optimizer;
  double bytes_per_cycle = 176.47;  // CS-2 I/O: 1.2 Tb/s at 850 MHz
  StreamEncoding encoding = StreamEncoding::Dense;
  float sparsity = 0.0f;            // fraction of each weight matrix pruned at init (static)
  uint64_t seed = 1;
};

class MemoryX {
 public:
  MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers);

  const MemoryXConfig& config() const { return cfg_; }
  size_t layers() const { return layers_.size(); }
  const LayerSpec& layer(size_t l) const { return layers_[l]; }
  LayerView view(size_t l) const;
  Tensor& weight(size_t l) { return params_[2 * l]; }
  Tensor& bias(size_t l) { return params_[2 * l + 1]; }
  const std::vector<uint8_t>& mask(size_t l) const { return masks_[l]; }
  uint64_t step() const { return step_; }

  std::vector<SharedBuffer> stream(size_t l, StreamPass pass, const std::vector<StreamSlice>& slices) const {
    return encode_weight_streams(view(l), step_, pass, cfg_.encoding, slices);
  }
  // Cycles MemoryX needs to push `bytes` at its bandwidth.
  uint64_t stream_cycles(uint64_t bytes) const;

  // The summed gradient of layer l as an (in+1) x out matrix (bias gradient in the last row).
  void apply_gradient(size_t l, const std::vector<float>& grad);
  // Counts one finished training step (after every layer's gradient is applied).
  void finish_step() { ++step_; }

  Checkpoint checkpoint() const;
  // Restores weights, optimizer state and step; throws UsageError when the checkpoint does not
  // match the model (a missing tensor or a shape).
  void restore(const Checkpoint& ckpt, const std::string& where);

 private:
  MemoryXConfig cfg_;
  std::vector<LayerSpec> layers_;
  std::vector<Tensor> params_;               // per layer: weight (in x out), bias (out)
  std::vector<std::vector<Tensor>> states_;  // per parameter: optimizer states
  std::vector<std::vector<uint8_t>> masks_;  // per layer weight: 1 = kept
  uint64_t step_ = 0;                        // completed steps
};

}  // namespace wse
