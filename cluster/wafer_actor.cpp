#include "cluster/wafer_actor.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "wire/control_message.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/input_batch.hpp"
#include "wire/stream_validation.hpp"

namespace wse {

WaferActor::WaferActor(FcWafer& fc, const FcLayout& layout, const ClusterShape& shape, uint64_t first_step, bool retain_last_layer,
                       DetailPolicy detail)
    : Actor("wafer " + std::to_string(fc.index())),
      fc_(fc),
      layout_(layout),
      shape_(shape),
      retain_(retain_last_layer),
      detail_(detail),
      first_step_(first_step),
      weights_step_(first_step) {}

std::string WaferActor::waiting_on() const {
  if (!active_) return inputs_.empty() && heads_.empty() ? "" : "holds messages for a step it has not begun";
  if (stage_ == 0) return step_label(step_) + ": its batch (InputBatch)";
  const PassKey k = passes_[stage_ - 1];
  const std::string pass = pass_label(k, shape_.layers[k.layer].name) + " of " + step_label(step_);
  if (heads_.empty()) return pass + ": its WeightStream";
  return pass + ": the rest of its stream (StreamResume)";
}

void WaferActor::receive(const Message& m) {
  switch (m.kind) {
    case MessageKind::InputBatch: inputs_.push_back(m); break;
    case MessageKind::WeightStream: heads_.push_back(m); break;
    case MessageKind::Control: {
      const ControlExpectation e{ControlKind::StreamResume, uint32_t(layout_.layer_count()), 0};
      decode_control(*m.payload.at(0), about(m, "control message"), &e);
      resumes_.push_back(m);
      break;
    }
    default: throw UsageError(about(m, message_kind_name(m.kind)) + ": not a message a wafer takes (InputBatch, WeightStream, StreamResume)");
  }
  advance();
}

void WaferActor::advance() {
  for (;;) {
    if (!active_) {
      if (inputs_.empty()) return;
      active_ = true;
      step_ = inputs_.front().step;
      eval_ = is_eval_step(step_);
      passes_ = step_passes(layout_.layer_count(), eval_);
      stage_ = 0;
      fc_.set_collecting(!eval_);
      // The whole step, its batch included, at one level: a cycle-level step starts from SRAM it
      // loads itself, whatever the steps before it ran as.
      fc_.set_detailed(eval_ ? detail_.eval_detailed() : detail_.detailed(step_, first_step_));
    }
    if (stage_ == 0) {
      run_input();
      ++stage_;
      continue;
    }
    if (stage_ > passes_.size()) {
      finish_step();
      continue;
    }
    if (!run_pass(passes_[stage_ - 1])) return;
    ++stage_;
  }
}

void WaferActor::run_input() {
  const Message m = inputs_.front();
  inputs_.pop_front();
  const InputBatchExpectation expect{step_, fc_.index(), layout_.batch_per_wafer(), layout_.model().layers[0], layout_.model().layers.back(),
                                     layout_.model().mixed};
  InputBatchMessage b = decode_input_batch(*m.payload.at(0), about(m, "InputBatch"), &expect);
  if (b.eval != eval_) throw UsageError(about(m, "InputBatch") + ": field 'eval' contradicts the step it belongs to");
  InputShard shard{b.rows, b.features, b.half, std::move(b.values), std::move(b.labels)};
  // The values reach the edge at the link's pace; one value per wavelet on the fabric.
  EdgeTiming t;
  t.head_first = m.arrive;
  t.bytes_per_cycle = m.bytes_per_cycle * 4.0 / (b.half ? 2.0 : 4.0);
  const FcPassResult r = fc_.load_input(shard, std::max(busy_, m.arrive), t);
  busy_ = r.end;
  last_span_ = span("input", step_, r.start, r.end, latest_cause({{last_span_, r.start}, {m.cause, m.cause_end}}, r.end));
}

std::vector<DecodedStream> WaferActor::decode(const Message& head, PassKey k) const {
  const size_t q = layout_.q();
  if (head.payload.size() != q)
    throw UsageError(about(head, "WeightStream") + ": " + std::to_string(head.payload.size()) + " column streams, expected one per PE column (" +
                     std::to_string(q) + ")");
  const std::vector<StreamSlice> slices = layout_.stream_slices(k.layer);
  const ClusterShape::Layer& shape = shape_.layers[k.layer];
  std::vector<DecodedStream> out;
  uint64_t words = 0;
  for (uint32_t c = 0; c < q; ++c) {
    const WeightStreamExpectation expect{k.layer, shape.rows, shape.cols, c, k.backward ? StreamPass::Backward : StreamPass::Forward,
                                         layout_.model().encoding, slices[c], weights_step_, shape.name};
    out.push_back(decode_weight_stream(*head.payload[c], about(head, "WeightStream for " + shape.name + " column " + std::to_string(c)), &expect));
    words += out.back().words.size();
  }
  if (words * 4 != head.total_bytes)
    throw UsageError(about(head, "WeightStream for " + shape.name) + ": announced " + std::to_string(head.total_bytes) + " bytes, carries " +
                     std::to_string(words * 4));
  return out;
}

bool WaferActor::run_pass(PassKey k) {
  const size_t last = layout_.layer_count() - 1;
  const std::string name = pass_label(k, shape_.layers[k.layer].name);
  const bool retained = k.backward && k.layer == last && retain_;
  std::vector<DecodedStream> streams;
  EdgeTiming t;
  Cycle start;
  bool waited = false;  // for the stream's head: then the head's arrival, not the wafer, started the pass
  CauseCandidate head_cause, tail_cause;
  if (retained) {
    // The weights stayed at the wafer since the forward pass: no stream, no wait.
    start = busy_;
    streams = retained_;
    for (DecodedStream& d : streams) d.pass = StreamPass::Backward;
    t.head_first = start;  // all there; the edge's pace only
    t.from_memoryx = false;
  } else {
    if (heads_.empty()) return false;
    const Message& head = heads_.front();
    if (head.layer != k.layer || head.backward != k.backward)
      throw UsageError(about(head, "WeightStream") + ": for " + pass_label({head.layer, head.backward}, shape_.layers.at(head.layer).name) +
                       ", where the wafer runs " + name + " next");
    start = std::max(busy_, head.arrive);
    waited = start > busy_;
    if (!credited_) {
      // The pass starts: MemoryX may send the rest of the stream (and the next one's head). What
      // made it start then, the credit's cause: the wafer's previous work, or the head's arrival
      // when the wafer waited for it (then the span that brought the head, as for the pass).
      ControlMessage c;
      c.kind = ControlKind::StreamCredit, c.step = step_, c.layer_index = k.layer;
      c.pass = k.backward ? StreamPass::Backward : StreamPass::Forward, c.started = start;
      const SharedBuffer buf = encode_control(c);
      send(up_, MessageKind::Control, step_, buf->size(), {buf}, start, waited ? head.cause : last_span_, start);
      credited_ = true;
    }
    const bool tail = head.total_bytes > head.bytes;
    if (tail && resumes_.empty()) return false;
    streams = decode(head, k);
    t.head_first = head.arrive;
    t.head_bytes = head.bytes;
    t.bytes_per_cycle = head.bytes_per_cycle;
    head_cause = {head.cause, head.cause_end};
    if (tail) {
      const Message& r = resumes_.front();
      const ControlMessage c = decode_control(*r.payload.at(0), about(r, "StreamResume"));
      if (c.step != step_ || c.layer_index != k.layer || (c.pass == StreamPass::Backward) != k.backward || c.bytes != head.total_bytes - head.bytes)
        throw UsageError(about(r, "StreamResume") + ": for another stream than the " + name + " the wafer runs");
      t.tail_first = r.arrive;
      if (r.bytes_per_cycle > 0) t.bytes_per_cycle = t.bytes_per_cycle > 0 ? std::min(t.bytes_per_cycle, r.bytes_per_cycle) : r.bytes_per_cycle;
      tail_cause = {r.cause, r.cause_end};
      resumes_.pop_front();
    }
    heads_.pop_front();
  }
  credited_ = false;
  FcPassResult r = fc_.run_pass(k.layer, k.backward, streams, start, t);
  if (!k.backward && k.layer == last && retain_ && !eval_) retained_ = std::move(streams);
  busy_ = r.end;
  // What the pass waited for: the wafer's previous work or the head of the stream, whichever came
  // later; the stream as a whole only if its last wavelet entered as it arrived.
  const SpanId cause = r.arrival_bound ? latest_cause({{last_span_, r.start}, head_cause, tail_cause}, r.end)
                       : waited              ? head_cause.span
                                             : last_span_;
  last_span_ = span(name, step_, r.start, r.end, cause);
  if (!k.backward && k.layer == last) {
    ControlMessage loss;
    loss.kind = ControlKind::Loss, loss.step = step_, loss.eval = eval_, loss.loss_sum = r.loss_sum, loss.correct = r.correct;
    loss.samples = layout_.batch_per_wafer(), loss.wafers = 1;
    const SharedBuffer buf = encode_control(loss);
    send(up_, MessageKind::Control, step_, buf->size(), {buf}, r.end, last_span_, r.end);
  }
  if (k.backward) {
    // dW leaves through the south edge as the pass runs: the message's first byte with the first
    // value, its last with the last.
    GradientMessage g{shape_.layers[k.layer].name, k.layer, fc_.index(), shape_.layers[k.layer].rows, shape_.layers[k.layer].cols, step_, {}, {}};
    if (layout_.model().encoding == StreamEncoding::Sparse) {
      g.values = std::move(r.dw);
      g.indices = std::move(r.positions);
      g.sparse = true;
    } else {
      g.values.assign(size_t(g.rows) * g.cols, 0.0f);
      for (size_t i = 0; i < r.positions.size(); ++i) g.values[r.positions[i]] = r.dw[i];
    }
    const SharedBuffer buf = encode_gradient_stream(g);
    // Its cause is done with it when its last byte leaves, before the pass's end (the dX tail
    // follows): with the pass's end, a reduce ending before it dropped the pass as its cause.
    Message& o = send(up_, MessageKind::GradientStream, step_, gradient_link_bytes(g), {buf}, r.first_egress, last_span_,
                      std::min<Cycle>(r.end, r.last_egress + 1), r.last_egress + 1);
    o.layer = k.layer;
  }
  return true;
}

void WaferActor::finish_step() {
  if (eval_) fc_.end_eval();
  else weights_step_ = step_ + 1;
  // The batch is used up: room for the next one.
  ControlMessage c;
  c.kind = ControlKind::InputCredit, c.step = step_;
  const SharedBuffer buf = encode_control(c);
  send(to_worker_, MessageKind::Control, step_, buf->size(), {buf}, busy_, last_span_, busy_);
  active_ = false;
}

}  // namespace wse
