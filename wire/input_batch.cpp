#include "wire/input_batch.hpp"

#include "core/errors.hpp"
#include "schemas/input_batch_generated.h"

namespace wse {

SharedBuffer encode_input_batch(const InputBatchMessage& m) {
  flatbuffers::FlatBufferBuilder fbb(256 + m.values.size() * 4 + m.labels.size());
  auto values = fbb.CreateVector(m.values);
  auto labels = fbb.CreateVector(m.labels);
  fbb.Finish(fb::CreateInputBatch(fbb, m.step, m.eval, m.wafer, m.rows, m.features, m.half, values, labels), fb::InputBatchIdentifier());
  return std::make_shared<const Buffer>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

InputBatchMessage decode_input_batch(const Buffer& buffer, const std::string& what, const InputBatchExpectation* expect) {
  flatbuffers::Verifier verifier(buffer.data(), buffer.size());
  if (buffer.size() < 8 || !fb::InputBatchBufferHasIdentifier(buffer.data()) || !fb::VerifyInputBatchBuffer(verifier))
    throw UsageError(what + ": not a valid InputBatch buffer (" + std::to_string(buffer.size()) +
                     " bytes failed the FlatBuffers verifier: corrupt or truncated)");
  const fb::InputBatch* b = fb::GetInputBatch(buffer.data());
  auto bad = [&](const std::string& field, const std::string& got, const std::string& expected) {
    return UsageError(what + ": field '" + field + "': " + got + ", expected " + expected);
  };
  const uint64_t n_values = b->values() ? b->values()->size() : 0, n_labels = b->labels() ? b->labels()->size() : 0;
  if (n_values != uint64_t(b->rows()) * b->features())
    throw bad("values", std::to_string(n_values) + " values", std::to_string(b->rows()) + " rows x " + std::to_string(b->features()) + " features");
  if (n_labels != b->rows()) throw bad("labels", std::to_string(n_labels) + " labels", "one per row (" + std::to_string(b->rows()) + ")");
  if (b->half())
    for (uint64_t i = 0; i < n_values; ++i)
      if (b->values()->Get(i) >> 16) throw bad("values", "value " + std::to_string(i) + " has bits above the fp16 half", "fp16 bits in the low half");
  if (expect) {
    if (b->step() != expect->step) throw bad("step", std::to_string(b->step()), std::to_string(expect->step));
    if (b->wafer() != expect->wafer) throw bad("wafer", std::to_string(b->wafer()), std::to_string(expect->wafer));
    if (b->rows() != expect->rows) throw bad("rows", std::to_string(b->rows()), std::to_string(expect->rows) + " (the wafer's shard)");
    if (b->features() != expect->features) throw bad("features", std::to_string(b->features()), std::to_string(expect->features) + " (the first layer's inputs)");
    if (b->half() != expect->half) throw bad("half", b->half() ? "true" : "false", expect->half ? "fp16 (mixed precision)" : "fp32");
    for (uint64_t i = 0; i < n_labels; ++i)
      if (b->labels()->Get(i) >= expect->classes)
        throw bad("labels", "label " + std::to_string(b->labels()->Get(i)) + " of row " + std::to_string(i), "below the " + std::to_string(expect->classes) + " classes");
  }
  InputBatchMessage m;
  m.step = b->step(), m.eval = b->eval(), m.wafer = b->wafer(), m.rows = b->rows(), m.features = b->features(), m.half = b->half();
  if (b->values()) m.values.assign(b->values()->begin(), b->values()->end());
  if (b->labels()) m.labels.assign(b->labels()->begin(), b->labels()->end());
  return m;
}

}  // namespace wse
