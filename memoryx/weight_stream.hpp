#pragma once
// Encoding a layer's weights as WeightStream messages (schemas/weight_stream.fbs), one per PE
// column, and decoding them at the wafer edge into the words an ingress port sends: a header
// word with the number of weight words, then the weights. Dense weights travel as fp32 in a
// fixed order; sparse weights as fp16 value + 16-bit index, and zeros are never sent.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wse {

using Buffer = std::vector<uint8_t>;
using SharedBuffer = std::shared_ptr<const Buffer>;

enum class StreamPass : uint8_t { Forward = 0, Backward = 1 };
enum class StreamEncoding : uint8_t { Dense = 0, Sparse = 1 };

// A fully-connected layer's parameters as the stream sees them: weight is in x out row-major,
// bias is folded in as row `in` (it multiplies a column of ones in the activations).
struct LayerView {
  std::string name;
  uint32_t index = 0;
  uint32_t in = 0, out = 0;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float at(uint32_t k, uint32_t n) const { return k < in ? weight[size_t(k) * out + n] : bias[n]; }
};

struct StreamSlice {
  uint32_t begin = 0, end = 0;
};

// Forward: column c gets rows [begin,end) of the (in+1) x out matrix, row-major. Backward: column
// c gets columns [begin,end) of the in x out weight (no bias), column by column. A sparse index
// is the word's position in that order; it must fit 16 bits.
std::vector<SharedBuffer> encode_weight_streams(const LayerView& layer, uint64_t step, StreamPass pass,
                                                StreamEncoding encoding, const std::vector<StreamSlice>& slices);

struct DecodedStream {
  uint32_t column = 0, layer_index = 0, rows = 0, cols = 0, slice_begin = 0, slice_end = 0;
  StreamPass pass = StreamPass::Forward;
  StreamEncoding encoding = StreamEncoding::Dense;
  std::vector<uint32_t> words;  // header (weight count) then the weights
};

struct WeightStreamExpectation;  // memoryx/stream_validation.hpp

// Runs the FlatBuffers verifier, then the meaning checks of memoryx/stream_validation.hpp (with
// what the reading model expects, when given): a corrupt, truncated or contradictory buffer is a
// UsageError naming `what` and the field.
DecodedStream decode_weight_stream(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect = nullptr);

// Number of weight words a slice would carry (nonzeros when sparse).
uint64_t stream_words(const LayerView& layer, StreamPass pass, StreamEncoding encoding, StreamSlice slice);

}  // namespace wse
