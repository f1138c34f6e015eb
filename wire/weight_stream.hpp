#pragma once
// Encoding a layer's weights as WeightStream messages (schemas/weight_stream.fbs), one per PE
// column, and decoding them at the wafer edge into the words an ingress port sends: a header
// word with the number of weights, then the weights. Dense weights travel as fp32 in a fixed
// order, or as fp16 pairs (mixed precision: two per word); sparse weights as fp16 value + 16-bit
// index, and pruned weights are never sent.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>


namespace wse {

using Buffer = std::vector<uint8_t>;
using SharedBuffer = std::shared_ptr<const Buffer>;

enum class StreamPass : uint8_t { Forward = 0, Backward = 1 };
enum class StreamEncoding : uint8_t { Dense = 0, Sparse = 1, DenseHalf = 2 };
const char* encoding_name(StreamEncoding e);

// A fully-connected layer's parameters as the stream sees them: weight is in x out row-major,
// bias is folded in as row `in` (it multiplies a column of ones in the activations).
struct LayerView {
  std::string name;
  uint32_t index = 0;
  uint32_t in = 0, out = 0;
  const float* weight = nullptr;
  const float* bias = nullptr;
  // Sparse streams carry the kept positions (1 = kept); without a mask, every position. A
  // parameter the sparsity block leaves dense (a bias, a layer no pattern selects, one whose
  // level prunes nothing) is dense: each weight, 0 or not, is sent and gets its gradient (a
  // weight that is 0 now need not stay 0). Only a mask prunes; `from_zeros` makes one of the zeros.
  const uint8_t* weight_mask = nullptr;
  const uint8_t* bias_mask = nullptr;
  // Row k of the (in + 1) x out matrix (k == in: the bias), and its mask row (null: no mask).
  const float* row(uint32_t k) const { return k < in ? weight + size_t(k) * out : bias; }
  const uint8_t* mask_row(uint32_t k) const {
    if (k >= in) return bias_mask;
    return weight_mask ? weight_mask + size_t(k) * out : nullptr;
  }
  float at(uint32_t k, uint32_t n) const { return row(k)[n]; }
  // Whether a sparse stream carries weight (k, n): the mask's kept positions, every one without.
  static bool kept(const uint8_t* mask_row, uint32_t n) { return !mask_row || mask_row[n] != 0; }
  bool kept(uint32_t k, uint32_t n) const { return kept(mask_row(k), n); }
};

struct StreamSlice {
  uint32_t begin = 0, end = 0;
};

// Column c gets rows [begin,end) of the (in+1) x out matrix, row-major, in both passes (the
// backward pass computes dX and dW per streamed weight). A sparse index is the weight's position
// in that order; it must fit 16 bits.
std::vector<SharedBuffer> encode_weight_streams(const LayerView& layer, uint64_t step, StreamPass pass,
                                                StreamEncoding encoding, const std::vector<StreamSlice>& slices);

struct DecodedStream {
  std::string layer;
  uint64_t step = 0;
  uint32_t column = 0, layer_index = 0, rows = 0, cols = 0, slice_begin = 0, slice_end = 0;
  StreamPass pass = StreamPass::Forward;
  StreamEncoding encoding = StreamEncoding::Dense;
  uint32_t weights = 0;         // weights carried (DenseHalf: up to two per word)
  std::vector<uint32_t> words;  // header (weight count) then the payload words
};

struct WeightStreamExpectation;  // wire/stream_validation.hpp

// Runs the FlatBuffers verifier, then the meaning checks of wire/stream_validation.hpp (with
// what the reading model expects, when given): a corrupt, truncated or contradictory buffer is a
// UsageError naming `what` and the field.
DecodedStream decode_weight_stream(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect = nullptr);
// The same checks without copying the words out (a SwarmX node forwarding the buffer): returns
// the words the stream puts onto the fabric (its header word included).
uint64_t check_weight_stream(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect = nullptr);

// Number of wavelets a slice's weights take (kept positions when sparse, pairs when DenseHalf).
uint64_t stream_words(const LayerView& layer, StreamPass pass, StreamEncoding encoding, StreamSlice slice);

}  // namespace wse
