#include "cluster/swarmx_node.hpp"

#include <algorithm>

#include "cluster/step_plan.hpp"
#include "core/errors.hpp"
#include "wire/control_message.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/stream_validation.hpp"

namespace wse {

namespace {
enum Kind { Gradient = 0, LossKind = 1, Credit = 2 };
}

std::string SwarmXNode::waiting_on() const {
  std::string w;
  for (const auto& [key, got] : waiting_) {
    size_t have = 0;
    for (const Message& m : got) have += !m.payload.empty();
    const char* what = std::get<0>(key) == Gradient ? "gradients" : std::get<0>(key) == LossKind ? "losses" : "pass starts";
    w += (w.empty() ? "" : "; ") + std::string(what) + " of " + step_label(std::get<1>(key)) + " from " + std::to_string(have) + " of " +
         std::to_string(children_.size()) + " children";
  }
  return w;
}

void SwarmXNode::receive(const Message& m) {
  auto it = std::find(children_.begin(), children_.end(), m.from);
  if (it == children_.end()) from_parent(m);
  else from_child(m, size_t(it - children_.begin()));
}

void SwarmXNode::from_parent(const Message& m) {
  std::string label = m.kind == MessageKind::WeightStream ? pass_label({m.layer, m.backward}, shape_.layers.at(m.layer).name) : "";
  if (m.kind == MessageKind::WeightStream) {
    // Checked on the way (the verifier and the stream's meaning), never copied.
    for (size_t c = 0; c < m.payload.size(); ++c) check_weight_stream(*m.payload[c], about(m, "WeightStream column " + std::to_string(c)));
  } else if (m.kind == MessageKind::Control) {
    const ControlExpectation e{ControlKind::StreamResume, uint32_t(shape_.layers.size()), 0};
    const ControlMessage c = decode_control(*m.payload.at(0), about(m, "control message"), &e);
    label = pass_label({c.layer_index, c.pass == StreamPass::Backward}, shape_.layers.at(c.layer_index).name);
  } else {
    throw UsageError(about(m, message_kind_name(m.kind)) + ": not a message SwarmX broadcasts (WeightStream, StreamResume)");
  }
  const SpanId s = next_span();
  Cycle end = m.arrive;
  for (LinkId l : down_) {
    Message& o = send(l, m.kind, m.step, m.bytes, m.payload, m.arrive, s, 0, m.last, m.bytes_per_cycle);
    o.total_bytes = m.total_bytes, o.layer = m.layer, o.backward = m.backward;
    o.cause_end = o.last;
    end = std::max(end, o.last);
  }
  const std::string what = m.kind == MessageKind::WeightStream ? "broadcast " + label : "broadcast the rest of " + label;
  span(what, m.step, m.arrive, end, latest_cause({{m.cause, m.cause_end}}, end));
}

void SwarmXNode::from_child(const Message& m, size_t child) {
  int kind;
  uint32_t layer = 0;
  bool backward = false;
  if (m.kind == MessageKind::GradientStream) {
    kind = Gradient, layer = m.layer;
  } else if (m.kind == MessageKind::Control) {
    const ControlMessage c = decode_control(*m.payload.at(0), about(m, "control message"));
    if (c.kind == ControlKind::Loss) kind = LossKind;
    else if (c.kind == ControlKind::StreamCredit) kind = Credit, layer = c.layer_index, backward = c.pass == StreamPass::Backward;
    else throw UsageError(about(m, control_kind_name(c.kind)) + ": not a message SwarmX reduces (GradientStream, Loss, StreamCredit)");
  } else {
    throw UsageError(about(m, message_kind_name(m.kind)) + ": not a message SwarmX reduces (GradientStream, Loss, StreamCredit)");
  }
  std::vector<Message>& got = waiting_[{kind, m.step, layer, backward}];
  got.resize(children_.size());
  if (!got[child].payload.empty())
    throw UsageError(about(m, message_kind_name(m.kind)) + ": a second one from the same child for the same step and layer");
  got[child] = m;
  for (const Message& g : got)
    if (g.payload.empty()) return;
  std::vector<Message> all = std::move(got);
  waiting_.erase({kind, m.step, layer, backward});
  if (kind == Gradient) reduce_gradients(m.step, layer, all);
  else if (kind == LossKind) reduce_losses(m.step, all);
  else reduce_credits(m.step, all);
}

namespace {

// When the children's messages came: the first and the last to arrive (the reduce leaves with
// the last), the last byte of any, and the latest-ending cause among them (the critical path).
struct Arrivals {
  Cycle first = kNever, ready = 0, last = 0;
  CauseCandidate latest;
};

Arrivals arrivals(const std::vector<Message>& got) {
  Arrivals a;
  for (const Message& m : got) {
    a.first = std::min(a.first, m.arrive);
    a.ready = std::max(a.ready, m.arrive), a.last = std::max(a.last, m.last);
    if (m.cause != kNoSpan && m.cause_end >= a.latest.end) a.latest = {m.cause, m.cause_end};
  }
  return a;
}

}  // namespace

void SwarmXNode::reduce_gradients(uint64_t step, uint32_t layer, std::vector<Message>& got) {
  if (layer >= shape_.layers.size()) throw UsageError(about(got[0], "GradientStream") + ": layer " + std::to_string(layer) + " is not in the model");
  const ClusterShape::Layer& shape = shape_.layers[layer];
  const GradientStreamExpectation expect{layer, shape.rows, shape.cols, shape_.wafers, step, shape.name};
  GradientMessage sum;
  for (size_t i = 0; i < got.size(); ++i) {
    GradientMessage g = decode_gradient_stream(*got[i].payload.at(0), about(got[i], "GradientStream of " + shape.name), &expect);
    if (i == 0) {
      sum = std::move(g);
    } else {
      if (g.sparse != sum.sparse || g.indices != sum.indices || g.values.size() != sum.values.size())
        throw UsageError(about(got[i], "GradientStream of " + shape.name) + ": its positions differ from " + actor_name(got[0].from) +
                         "'s (every wafer streams the same mask)");
      for (size_t k = 0; k < sum.values.size(); ++k) sum.values[k] += g.values[k];  // in child order, as the tree adds
    }
  }
  const Arrivals a = arrivals(got);
  const SharedBuffer buf = encode_gradient_stream(sum);
  Message& o = send(up_, MessageKind::GradientStream, step, gradient_link_bytes(sum), {buf}, a.ready, next_span(), 0, a.last);
  o.layer = layer;
  o.cause_end = o.last;
  const CauseCandidate cause = latest_candidate({a.latest}, o.last);
  span("reduce " + shape.name, step, a.first, o.last, cause.span, cause.end);
}

void SwarmXNode::reduce_losses(uint64_t step, std::vector<Message>& got) {
  const ControlExpectation e{ControlKind::Loss, 0, shape_.wafers};
  ControlMessage sum;
  for (size_t i = 0; i < got.size(); ++i) {
    const ControlMessage c = decode_control(*got[i].payload.at(0), about(got[i], "Loss"), &e);
    if (i == 0) sum = c;
    else sum.loss_sum += c.loss_sum, sum.correct += c.correct, sum.samples += c.samples, sum.wafers += c.wafers;
  }
  const Arrivals a = arrivals(got);
  const SharedBuffer buf = encode_control(sum);
  send(to_user_ ? *to_user_ : up_, MessageKind::Control, step, buf->size(), {buf}, a.ready, a.latest.span, a.latest.end);
}

void SwarmXNode::reduce_credits(uint64_t step, std::vector<Message>& got) {
  const ControlExpectation e{ControlKind::StreamCredit, uint32_t(shape_.layers.size()), 0};
  ControlMessage c;
  for (size_t i = 0; i < got.size(); ++i) {
    const ControlMessage one = decode_control(*got[i].payload.at(0), about(got[i], "StreamCredit"), &e);
    if (i == 0) c = one;
    c.started = std::max(c.started, one.started);
  }
  const Arrivals a = arrivals(got);
  const SharedBuffer buf = encode_control(c);
  send(up_, MessageKind::Control, step, buf->size(), {buf}, a.ready, a.latest.span, a.latest.end);
}

}  // namespace wse
