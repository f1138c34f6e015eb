#pragma once
// The training part of a run config (kernel: fc_train).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "cluster/step_plan.hpp"
#include "memoryx/memoryx.hpp"
#include "swarmx/swarmx.hpp"

namespace wse {

struct TrainConfig {
  std::vector<uint32_t> layers = {784, 256, 256, 10};  // feature sizes, input first
  std::filesystem::path data_dir = "/usr/share/datasets/fashion-mnist";
  uint32_t train_samples = 0;   // 0 = the whole training set
  uint32_t eval_samples = 1000; // test samples scored at the end (0 = none)
  uint32_t batch_size = 64;     // global, split evenly over num_csx wafers
  uint32_t num_csx = 1;
  uint32_t epochs = 1;
  uint32_t max_steps = 0;       // 0 = epochs decide
  uint32_t log_every = 10;
  uint32_t checkpoint_every = 0;             // 0 = only at the end
  std::filesystem::path checkpoint_dir;      // default: <out>/checkpoints
  std::filesystem::path resume_from;
  // Mixed precision: fp16 weights on the wire (two per dense wavelet), fp16 activations and
  // gradients in SRAM with fp32 sums, fp32 master weights and optimizer state in MemoryX; dZ is
  // scaled by loss_scale on the wafer and MemoryX divides it out.
  bool mixed = false;
  float loss_scale = 1.0f;
  // The output layer's weights stay on the wafer between its forward and backward pass (the seed:
  // "in practice, the weights of this output layer can be retained to save time"): no backward
  // stream for it from MemoryX.
  bool retain_last_layer = false;
  // training.detail: which steps the wafers run cycle by cycle (the others functionally, with
  // the same numbers); data.shuffle: a new order of the training samples every epoch, from
  // weights.seed.
  DetailPolicy detail;
  bool shuffle = false;
  MemoryXConfig memoryx;
  SwarmXConfig swarmx;
};

}  // namespace wse
