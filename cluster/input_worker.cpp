#include "cluster/input_worker.hpp"

#include "core/half.hpp"

#include <bit>

#include "cluster/step_plan.hpp"
#include "core/errors.hpp"
#include "wire/control_message.hpp"
#include "wire/input_batch.hpp"

namespace wse {

std::string InputWorker::waiting_on() const {
  if (steps_.empty()) return "";
  return step_label(steps_.front().step) + ": wafer " + std::to_string(wafer_) + "'s InputCredit (room for the batch)";
}

void InputWorker::receive(const Message& m) {
  if (m.kind != MessageKind::Control) throw UsageError(about(m, message_kind_name(m.kind)) + ": an input worker takes only control messages");
  const ControlMessage c = decode_control(*m.payload.at(0), about(m, "control message"));
  if (c.kind == ControlKind::StepBegin) {
    if (c.samples != layout_.model().batch_size)
      throw UsageError(about(m, "StepBegin") + ": field 'samples': " + std::to_string(c.samples) + ", expected the global batch of " +
                       std::to_string(layout_.model().batch_size));
    steps_.push_back({c.step, c.eval, m.cause, m.cause_end});
  } else if (c.kind == ControlKind::InputCredit) {
    ++credits_;
    credit_cause_ = {m.cause, m.cause_end};
  } else {
    throw UsageError(about(m, control_kind_name(c.kind)) + ": not a message an input worker takes (StepBegin, InputCredit)");
  }
  pump();
}

void InputWorker::pump() {
  while (credits_ && !steps_.empty()) {
    const Pending p = steps_.front();
    steps_.pop_front();
    --credits_;
    auto it = batches_.find(p.step);
    if (it == batches_.end()) throw std::logic_error(name() + ": no data for " + step_label(p.step));
    const uint32_t rows = layout_.batch_per_wafer(), features = layout_.model().layers[0];
    const bool half = layout_.model().mixed;
    InputBatchMessage b;
    b.step = p.step, b.eval = p.eval, b.wafer = wafer_, b.rows = rows, b.features = features, b.half = half;
    b.values.resize(size_t(rows) * features);
    const float* x = it->second.x + size_t(wafer_) * rows * features;  // this wafer's shard
    for (size_t i = 0; i < b.values.size(); ++i)
      b.values[i] = half ? uint32_t(float_to_half_bits(x[i])) : std::bit_cast<uint32_t>(x[i]);
    b.labels.assign(it->second.labels + size_t(wafer_) * rows, it->second.labels + size_t(wafer_) * rows + rows);
    const SharedBuffer buf = encode_input_batch(b);
    // On the link: the values at their width and a byte per label.
    const uint64_t bytes = uint64_t(rows) * features * (half ? 2 : 4) + rows;
    Message& sent = send(to_wafer_, MessageKind::InputBatch, p.step, bytes, {buf}, clock(), next_span(), 0);
    sent.cause_end = sent.last;  // the span below, which ends when the last byte is at the wafer
    span("batch " + step_label(p.step), p.step, sent.sent, sent.last, latest_cause({{p.cause, p.cause_end}, credit_cause_}, sent.last));
  }
}

}  // namespace wse
