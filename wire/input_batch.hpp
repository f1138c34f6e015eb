#pragma once
// InputBatch messages (schemas/input_batch.fbs): one wafer's shard of a step's batch, from its
// input worker to the wafer's west edge. Decoding checks the shape, the labels and the fp16 bits
// against what the wafer expects before a word enters the fabric.
#include <cstdint>
#include <string>
#include <vector>

#include "wire/weight_stream.hpp"

namespace wse {

struct InputBatchMessage {
  uint64_t step = 0;
  bool eval = false;
  uint32_t wafer = 0, rows = 0, features = 0;
  bool half = false;               // values are fp16 bits
  std::vector<uint32_t> values;    // rows x features, row-major
  std::vector<uint8_t> labels;     // one per row
};

SharedBuffer encode_input_batch(const InputBatchMessage& m);

struct InputBatchExpectation {
  uint64_t step = 0;
  uint32_t wafer = 0, rows = 0, features = 0, classes = 0;
  bool half = false;
};

InputBatchMessage decode_input_batch(const Buffer& buffer, const std::string& what, const InputBatchExpectation* expect = nullptr);

}  // namespace wse
