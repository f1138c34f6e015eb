#pragma once
// The FC layer programs of one wafer, run functionally: the same numbers as the cycle-level PE
// programs (kernels/fc/fc_programs.cpp) without the fabric, for training runs that sample the
// cycle level (`training.detail`). Bit-identical by construction, because every sum is taken in
// the order and the precision the PEs take it:
//
// - forward: each PE column sums its K-slice in stream order (fp32, a product rounded before the
//   add, fp16 operands in mixed precision), the partial sums then chain west to east
//   (s_c = P_c + s_{c-1}); ReLU with fmax and the next input rounded to the activation type; the
//   last layer's softmax, loss and dZ exactly as the east-most PE computes them;
// - backward: dX per feature over the outputs in stream order, masked by the ReLU and rounded;
//   dW per PE row over its batch rows in order, the rows' partials chained north to south;
// - pruned weights are skipped, never added as zero.
//
// The cluster's actors (MemoryX, SwarmX, the messages) run as in a detailed step; only the
// wafer's mesh is replaced (kernels/fc/fc_wafer.hpp). tests/functional_test.cpp holds it to the
// bits of cycle-level runs.
#include <cstdint>
#include <vector>

#include "kernels/fc/fc_layout.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

struct InputShard;

class FcFunctional {
 public:
  explicit FcFunctional(const FcLayout& layout);

  // The step's batch: the first layer's input (rounded as the PEs hold it) and the labels.
  void load_input(const InputShard& shard);
  // Forward pass of layer l; for the last layer, the loss summed over the shard (as the wafer
  // adds the east egress's fp32 losses) and the correct predictions.
  void forward(size_t l, const std::vector<DecodedStream>& streams, double& loss_sum, uint32_t& correct);
  // Backward pass of layer l: one dW per streamed weight, in stream order (column after column),
  // and its position in the layer's (in+1) x out matrix.
  void backward(size_t l, const std::vector<DecodedStream>& streams, std::vector<float>& dw, std::vector<uint32_t>& positions);

 private:
  // The layer's weights as the PEs see them (rows x out, bias row last) and which were sent.
  void unpack(size_t l, const std::vector<DecodedStream>& streams);
  float act(float v) const;

  const FcLayout& layout_;
  uint32_t batch_ = 0;                  // rows of the wafer's shard
  std::vector<std::vector<float>> x_;   // per layer: its input, (in + 1) x batch, feature-major, ones row last
  std::vector<std::vector<float>> dz_;  // per layer: dZ, out x batch
  std::vector<uint32_t> labels_;
  std::vector<float> w_;                // (in + 1) x out
  std::vector<uint8_t> kept_;           // (in + 1) x out
  bool all_kept_ = true;
  std::vector<float> s_, p_, wt_, dx_;  // scratch
};

}  // namespace wse
