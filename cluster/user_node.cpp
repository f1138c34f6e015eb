#include "cluster/user_node.hpp"

#include "cluster/step_plan.hpp"
#include "core/errors.hpp"
#include "wire/control_message.hpp"

namespace wse {

void UserNode::begin(uint64_t step, bool eval, uint32_t samples) {
  ControlMessage c;
  c.kind = ControlKind::StepBegin, c.step = step, c.eval = eval, c.samples = samples;
  const SharedBuffer buf = encode_control(c);
  const SpanId s = span("begin " + step_label(step), step, clock(), clock(), kNoSpan);
  send(to_memoryx_, MessageKind::Control, step, buf->size(), {buf}, clock(), s, clock());
  for (LinkId l : to_workers_) send(l, MessageKind::Control, step, buf->size(), {buf}, clock(), s, clock());
  outcomes_[step];
}

const StepOutcome& UserNode::outcome(uint64_t step) const {
  static const StepOutcome none;
  auto it = outcomes_.find(step);
  return it == outcomes_.end() ? none : it->second;
}

bool UserNode::finished(uint64_t step, bool eval) const {
  const StepOutcome& o = outcome(step);
  return o.has_loss && (eval || o.done);
}

std::string UserNode::waiting_on() const {
  std::string w;
  for (const auto& [step, o] : outcomes_) {
    if (!o.has_loss) w += (w.empty() ? "" : "; ") + step_label(step) + ": its loss";
    if (!o.done && !is_eval_step(step)) w += (w.empty() ? "" : "; ") + step_label(step) + ": MemoryX's StepDone";
  }
  return w;
}

void UserNode::receive(const Message& m) {
  if (m.kind != MessageKind::Control) throw UsageError(about(m, message_kind_name(m.kind)) + ": the user node takes only control messages");
  const ControlMessage c = decode_control(*m.payload.at(0), about(m, "control message"));
  auto it = outcomes_.find(c.step);
  if (it == outcomes_.end())
    throw UsageError(about(m, control_kind_name(c.kind)) + ": for " + step_label(c.step) + ", which the user node never began");
  StepOutcome& o = it->second;
  if (c.kind == ControlKind::Loss) {
    const ControlExpectation e{ControlKind::Loss, 0, wafers_};
    decode_control(*m.payload.at(0), about(m, "control message"), &e);
    if (c.wafers != wafers_)
      throw UsageError(about(m, "Loss") + ": field 'wafers': " + std::to_string(c.wafers) + ", expected the sum over all " + std::to_string(wafers_));
    o.has_loss = true, o.loss_sum = c.loss_sum, o.correct = c.correct, o.samples = c.samples, o.loss_at = m.last;
    span("loss " + step_label(c.step), c.step, m.arrive, m.last, latest_cause({{m.cause, m.cause_end}}, m.last));
  } else if (c.kind == ControlKind::StepDone) {
    o.done = true, o.skipped_updates = c.skipped_updates, o.done_at = m.last;
  } else {
    throw UsageError(about(m, control_kind_name(c.kind)) + ": not a message the user node takes (Loss, StepDone)");
  }
}

}  // namespace wse
