#include "cluster/memoryx_actor.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "wire/control_message.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/stream_validation.hpp"

namespace wse {

MemoryXActor::MemoryXActor(MemoryX& mx, const FcLayout& layout, const ClusterShape& shape, const MachineSpec& machine, float loss_scale,
                           bool retain_last_layer)
    : Actor("MemoryX"), mx_(mx), layout_(layout), shape_(shape), machine_(machine), loss_scale_(loss_scale), retain_(retain_last_layer) {
  const size_t layers = layout.layer_count();
  updated_step_.assign(layers, 0);
  updated_any_.assign(layers, false);
  update_end_.assign(layers, 0);
  update_span_.assign(layers, kNoSpan);
  last_grads_.resize(layers);
  next_train_step_ = mx.step();
  // The masks are static (set when MemoryX is built): counted once.
  for (size_t l = 0; l < layers; ++l) {
    uint64_t kept = 0;
    for (size_t p : {2 * l, 2 * l + 1}) {
      const std::vector<uint8_t>& mask = mx.param_mask(p);
      kept += mask.empty() ? mx.param(p).size() : uint64_t(std::count_if(mask.begin(), mask.end(), [](uint8_t k) { return k != 0; }));
    }
    kept_.push_back(kept);
  }
}

Cycle MemoryXActor::update_cycles(size_t l) const {
  // Read: weight, gradient and each optimizer state; write: weight and states (fp32); for the
  // weights the optimizer updates, which a sparse layer's mask makes its kept ones.
  const uint64_t states = mx_.states(2 * l).size();
  const double bytes = double(kept_[l]) * 4.0 * double(3 + 2 * states);
  return Cycle(std::ceil(bytes / machine_.memoryx_update_bytes_per_cycle));
}

uint64_t MemoryXActor::stream_bytes(size_t l, StreamPass pass) const {
  uint64_t words = 0;
  const LayerView view = mx_.view(l);
  for (const StreamSlice& s : layout_.stream_slices(l)) words += 1 + stream_words(view, pass, layout_.model().encoding, s);  // the header word too
  return words * 4;
}

const MemoryXActor::StepEnd* MemoryXActor::step_end(uint64_t step) const {
  auto it = step_ends_.find(step);
  return it == step_ends_.end() ? nullptr : &it->second;
}

std::string MemoryXActor::waiting_on() const {
  std::string w;
  if (next_ < queue_.size()) {
    const Stream& j = queue_[next_];
    w = "to send " + pass_label(j.key, shape_.layers[j.key.layer].name) + " of " + step_label(j.step) + ", ";
    if (next_ > 0 && !queue_[next_ - 1].credited) w += "waits for the wafers to start the stream before it";
    else w += "waits for the update of " + shape_.layers[j.key.layer].name + " of step " + std::to_string(j.update_step);
  }
  if (!expected_grads_.empty())
    w += std::string(w.empty() ? "" : "; ") + "waits for the gradient of " + shape_.layers[expected_grads_.front().second].name + " of " +
         step_label(expected_grads_.front().first);
  return w;
}

void MemoryXActor::receive(const Message& m) {
  if (m.kind == MessageKind::GradientStream) return gradient(m);
  if (m.kind != MessageKind::Control)
    throw UsageError(about(m, message_kind_name(m.kind)) + ": not a message MemoryX takes (StepBegin, StreamCredit, GradientStream)");
  const ControlMessage c = decode_control(*m.payload.at(0), about(m, "control message"));
  if (c.kind == ControlKind::StepBegin) step_begin(m);
  else if (c.kind == ControlKind::StreamCredit) credit(m);
  else throw UsageError(about(m, control_kind_name(c.kind)) + ": not a message MemoryX takes (StepBegin, StreamCredit, GradientStream)");
}

void MemoryXActor::step_begin(const Message& m) {
  const ControlMessage c = decode_control(*m.payload.at(0), about(m, "StepBegin"));
  if (c.samples != layout_.model().batch_size)
    throw UsageError(about(m, "StepBegin") + ": field 'samples': " + std::to_string(c.samples) + ", expected the global batch of " +
                     std::to_string(layout_.model().batch_size));
  if (!c.eval && c.step != next_train_step_)
    throw UsageError(about(m, "StepBegin") + ": field 'step': " + std::to_string(c.step) + ", expected the next training step, " +
                     std::to_string(next_train_step_));
  const size_t layers = layout_.layer_count();
  for (PassKey k : step_passes(layers, c.eval)) {
    if (!streamed(k, layers, retain_)) continue;
    Stream s;
    s.step = c.step, s.key = k;
    s.needs_update = !k.backward && any_train_step_;
    s.update_step = last_train_step_;
    s.begin = {m.cause, m.cause_end};
    s.begin_at = m.arrive;
    queue_.push_back(s);
  }
  if (!c.eval) {
    for (size_t l = layers; l-- > 0;) expected_grads_.push_back({c.step, uint32_t(l)});
    any_train_step_ = true, last_train_step_ = c.step, ++next_train_step_;
  }
  pump();
}

void MemoryXActor::credit(const Message& m) {
  const ControlExpectation e{ControlKind::StreamCredit, uint32_t(layout_.layer_count()), 0};
  const ControlMessage c = decode_control(*m.payload.at(0), about(m, "StreamCredit"), &e);
  if (credit_next_ >= next_)
    throw UsageError(about(m, "StreamCredit") + ": for a stream MemoryX has not sent (" + pass_label({c.layer_index, c.pass == StreamPass::Backward}, "fc" + std::to_string(c.layer_index + 1)) + ")");
  Stream& s = queue_[credit_next_];
  if (c.step != s.step || c.layer_index != s.key.layer || (c.pass == StreamPass::Backward) != s.key.backward)
    throw UsageError(about(m, "StreamCredit") + ": for " + pass_label({c.layer_index, c.pass == StreamPass::Backward}, shape_.layers.at(c.layer_index).name) +
                     " of " + step_label(c.step) + ", where MemoryX waits for the start of " + pass_label(s.key, shape_.layers[s.key.layer].name) +
                     " of " + step_label(s.step));
  s.credited = true;
  ++credit_next_;
  last_credit_ = {m.cause, m.cause_end};
  if (s.tail) {
    // The pass has started: the edge drains as the link fills it, so the rest of the stream goes now.
    ControlMessage r;
    r.kind = ControlKind::StreamResume, r.step = s.step, r.layer_index = s.key.layer;
    r.pass = s.key.backward ? StreamPass::Backward : StreamPass::Forward, r.bytes = s.tail;
    const SharedBuffer buf = encode_control(r);
    // The rest is its own span, caused by the pass start that freed the edge (not by the head,
    // which finished long before): the critical path then names the wafer's wait, not MemoryX.
    const SpanId rest = next_span();
    Message& o = send(down_, MessageKind::Control, s.step, s.tail, {buf}, clock(), rest, 0);
    o.layer = s.key.layer, o.backward = s.key.backward;
    const Cycle end = link(down_).free;
    o.cause_end = end;
    s.span = span("stream the rest of " + pass_label(s.key, shape_.layers[s.key.layer].name), s.step, o.sent, end,
                  latest_cause({last_credit_, {link_span_, link_end_}}, end));
    link_span_ = s.span, link_end_ = end;
    s.tail = 0;
  }
  pump();
}

void MemoryXActor::gradient(const Message& m) {
  if (expected_grads_.empty() || expected_grads_.front().first != m.step || expected_grads_.front().second != m.layer)
    throw UsageError(about(m, "GradientStream") + ": of layer " + std::to_string(m.layer) + (expected_grads_.empty() ? ", where MemoryX expects none"
                     : ", where MemoryX expects " + shape_.layers[expected_grads_.front().second].name + " of " + step_label(expected_grads_.front().first)));
  const uint32_t l = m.layer;
  const ClusterShape::Layer& shape = shape_.layers[l];
  const GradientStreamExpectation expect{l, shape.rows, shape.cols, shape_.wafers, m.step, shape.name};
  GradientMessage g = decode_gradient_stream(*m.payload.at(0), about(m, "GradientStream of " + shape.name), &expect);
  expected_grads_.erase(expected_grads_.begin());
  std::vector<float> grad;
  if (g.sparse) {
    grad.assign(size_t(shape.rows) * shape.cols, 0.0f);
    for (size_t i = 0; i < g.indices.size(); ++i) grad[g.indices[i]] = g.values[i];
  } else {
    grad = std::move(g.values);
  }
  if (grad.size() != size_t(shape.rows) * shape.cols)
    throw UsageError(about(m, "GradientStream of " + shape.name) + ": " + std::to_string(grad.size()) + " values, expected " +
                     std::to_string(shape.rows) + " x " + std::to_string(shape.cols));
  if (!mx_.apply_gradient(l, grad, loss_scale_)) ++skipped_, ++skipped_this_step_;
  last_grads_[l] = std::move(grad);
  // The update starts once the whole sum is here and the optimizer is free.
  const Cycle start = std::max(optimizer_free_, m.last);
  const Cycle end = start + update_cycles(l);
  const SpanId u = span("update " + shape.name, m.step, start, end,
                        latest_cause({{m.cause, m.cause_end}, {optimizer_span_, optimizer_free_}}, end));
  optimizer_free_ = end, optimizer_span_ = u;
  updated_step_[l] = m.step, updated_any_[l] = true, update_end_[l] = end, update_span_[l] = u;
  if (l == 0) {  // the last gradient of the step
    mx_.finish_step();
    step_ends_[m.step] = {end, u};
    ControlMessage d;
    d.kind = ControlKind::StepDone, d.step = m.step, d.skipped_updates = skipped_this_step_;
    skipped_this_step_ = 0;
    const SharedBuffer buf = encode_control(d);
    send(to_user_, MessageKind::Control, m.step, buf->size(), {buf}, end, u, end);
  }
  pump();
}

void MemoryXActor::pump() {
  const size_t layers = layout_.layer_count();
  while (next_ < queue_.size()) {
    Stream& j = queue_[next_];
    if (next_ > 0 && !queue_[next_ - 1].credited) return;  // the edge holds one stream ahead
    const uint32_t l = j.key.layer;
    if (j.needs_update && (!updated_any_[l] || updated_step_[l] != j.update_step)) return;
    const StreamPass pass = j.key.backward ? StreamPass::Backward : StreamPass::Forward;
    if (!is_eval_step(j.step) && mx_.step() != j.step)
      throw std::logic_error("MemoryX: streaming " + step_label(j.step) + " with weights of step " + std::to_string(mx_.step()));
    std::vector<SharedBuffer> buffers = encode_weight_streams(mx_.view(l), mx_.step(), pass, layout_.model().encoding, layout_.stream_slices(l));
    const uint64_t bytes = stream_bytes(l, pass);
    const uint64_t head = std::min<uint64_t>(bytes, machine_.edge_buffer_bytes);
    const Cycle ready = std::max(j.begin_at, j.needs_update ? update_end_[l] : 0);
    Message& o = send(down_, MessageKind::WeightStream, j.step, head, std::move(buffers), ready, next_span(), 0);
    o.total_bytes = bytes, o.layer = l, o.backward = j.key.backward;
    const Cycle end = link(down_).free;
    o.cause_end = end;
    const SpanId cause = latest_cause({j.begin, {link_span_, link_end_}, last_credit_,
                                       {j.needs_update ? update_span_[l] : kNoSpan, j.needs_update ? update_end_[l] : 0}},
                                      end);
    j.span = span("stream " + pass_label(j.key, shape_.layers[l].name), j.step, o.sent, end, cause);
    j.tail = bytes - head;
    link_span_ = j.span, link_end_ = end;
    ++next_;
    (void)layers;
  }
}

}  // namespace wse
