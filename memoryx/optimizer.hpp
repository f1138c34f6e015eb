#pragma once
// Optimizers MemoryX runs on the reduced gradients: SGD with momentum and Adam, with PyTorch's
// update rules. Their state lives beside the weights as tensors named "<param>.<state>".
#include <cstdint>
#include <string>
#include <vector>

#include "memoryx/tensor.hpp"

namespace wse {

struct OptimizerConfig {
  std::string kind = "sgd";  // sgd | adam
  float lr = 0.01f;
  float momentum = 0.9f;     // sgd
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // adam
  float weight_decay = 0.0f;
};

// State tensor names an optimizer keeps for each parameter.
std::vector<std::string> optimizer_state_names(const OptimizerConfig& cfg);

// One update of `param` with gradient `grad`. `state` holds the tensors named by
// optimizer_state_names, in that order; `step` counts from 1 (Adam's bias correction).
// Weights whose `mask` entry is 0 stay exactly 0, as do their states (static sparsity).
void optimizer_step(const OptimizerConfig& cfg, uint64_t step, Tensor& param, const std::vector<float>& grad,
                    std::vector<Tensor*> state, const std::vector<uint8_t>* mask = nullptr);

}  // namespace wse
