#pragma once
// What a WeightStream or GradientStream message must mean, beyond how it is laid out. The
// FlatBuffers verifier proves a buffer safe to read; these rules prove that what it says is a
// slice of a real layer: known enum values, a slice inside the matrix and not reversed, counts
// that agree, sparse indices inside the slice and strictly increasing, and, when the reader
// knows its model, the layer, shape, column, pass, encoding and step it expects. Every decoder
// calls these before it hands anything on; a new encoding or message kind adds its rules here.
// Each rejection is a UsageError naming the message (`what`), the field, the value and what was
// expected.
#include <cstdint>
#include <string>
#include <string_view>

#include "wire/weight_stream.hpp"

namespace wse {

// A WeightStream's fields as they came off the wire (enums still raw, so unknown values show).
struct WeightStreamFields {
  std::string_view layer;  // its name
  uint32_t layer_index = 0, rows = 0, cols = 0, column = 0, row_begin = 0, row_end = 0, nonzeros = 0;
  uint64_t step = 0;
  int pass = 0, encoding = 0;
  const uint32_t* payload = nullptr;
  uint32_t payload_size = 0;
};

// What the reader of a stream knows it must be.
struct WeightStreamExpectation {
  uint32_t layer_index = 0, rows = 0, cols = 0, column = 0;
  StreamPass pass = StreamPass::Forward;
  StreamEncoding encoding = StreamEncoding::Dense;
  StreamSlice slice;
  uint64_t step = 0;
  std::string_view layer;  // the model's name for layer_index; empty: not checked
};

// Weight positions a slice covers: its rows x cols (both passes stream rows). Dense streams carry
// exactly this many weights.
uint64_t slice_positions(uint32_t rows, uint32_t cols, StreamPass pass, StreamSlice slice);

void validate_weight_stream(const WeightStreamFields& f, const std::string& what, const WeightStreamExpectation* expect = nullptr);

struct GradientStreamFields {
  std::string_view layer;
  uint32_t layer_index = 0, wafer = 0, rows = 0, cols = 0;
  uint64_t step = 0;
  uint64_t values = 0;  // count carried
  bool has_indices = false;  // sparse: the values sit at these flat positions
  const uint32_t* indices = nullptr;
  uint64_t index_count = 0;
};

struct GradientStreamExpectation {
  uint32_t layer_index = 0, rows = 0, cols = 0;
  uint32_t wafers = 1;  // wafer must be below this
  uint64_t step = 0;
  std::string_view layer;  // the model's name for layer_index; empty: not checked
};

void validate_gradient_stream(const GradientStreamFields& f, const std::string& what, const GradientStreamExpectation* expect = nullptr);

}  // namespace wse
