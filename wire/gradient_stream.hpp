#pragma once
// GradientStream messages (schemas/gradient_stream.fbs): one wafer's weight gradient for one
// layer and step, as it leaves the wafer's egress ports for SwarmX.
#include <cstdint>
#include <string>
#include <vector>

#include "wire/weight_stream.hpp"

namespace wse {

struct GradientMessage {
  std::string layer;
  uint32_t layer_index = 0, wafer = 0, rows = 0, cols = 0;
  uint64_t step = 0;
  std::vector<float> values;     // rows x cols, row-major; or the value at each index
  std::vector<uint32_t> indices;  // sparse: flat positions (row * cols + col), ascending
  bool sparse = false;            // values sit at `indices` (possibly none: every weight pruned)
};

// The bytes a gradient stands for on the SwarmX and MemoryX links: 4 a value, the 32-bit wavelet
// each gradient leaves the wafer as. A sparse gradient's positions are the static mask, which
// every wafer, SwarmX node and MemoryX holds; they travel in the message to be checked, not on
// the links. (The encoded message's size was charged until the forty-sixth round: value and
// index, 8 bytes a kept weight, so a sparse gradient below half sparsity took longer than the
// dense one.) A weight stream's words are charged the same way (WeightStream total_bytes).
inline uint64_t gradient_link_bytes(const GradientMessage& g) { return 4 * uint64_t(g.values.size()); }

SharedBuffer encode_gradient_stream(const GradientMessage& g);
struct GradientStreamExpectation;  // wire/stream_validation.hpp

// Runs the verifier, then the meaning checks of wire/stream_validation.hpp (with what the
// reading model expects, when given): a corrupt, truncated or contradictory buffer is a
// UsageError naming `what` and the field.
GradientMessage decode_gradient_stream(const Buffer& buffer, const std::string& what, const GradientStreamExpectation* expect = nullptr);

}  // namespace wse
