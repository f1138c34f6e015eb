#include "wire/control_message.hpp"

#include "core/errors.hpp"
#include "schemas/control_generated.h"

namespace wse {

const char* control_kind_name(ControlKind k) {
  switch (k) {
    case ControlKind::StepBegin: return "StepBegin";
    case ControlKind::InputCredit: return "InputCredit";
    case ControlKind::StreamCredit: return "StreamCredit";
    case ControlKind::StreamResume: return "StreamResume";
    case ControlKind::Loss: return "Loss";
    case ControlKind::StepDone: return "StepDone";
  }
  return "unknown";
}

SharedBuffer encode_control(const ControlMessage& m) {
  flatbuffers::FlatBufferBuilder fbb(128);
  const auto kind = m.eval ? fb::StepKind::Eval : fb::StepKind::Train;
  const auto pass = fb::Pass(m.pass);
  flatbuffers::Offset<void> body;
  fb::ControlBody type = fb::ControlBody::NONE;
  switch (m.kind) {
    case ControlKind::StepBegin:
      body = fb::CreateStepBegin(fbb, m.step, kind, m.samples).Union(), type = fb::ControlBody::StepBegin;
      break;
    case ControlKind::InputCredit:
      body = fb::CreateInputCredit(fbb, m.step).Union(), type = fb::ControlBody::InputCredit;
      break;
    case ControlKind::StreamCredit:
      body = fb::CreateStreamCredit(fbb, m.step, m.layer_index, pass, m.started).Union(), type = fb::ControlBody::StreamCredit;
      break;
    case ControlKind::StreamResume:
      body = fb::CreateStreamResume(fbb, m.step, m.layer_index, pass, m.bytes).Union(), type = fb::ControlBody::StreamResume;
      break;
    case ControlKind::Loss:
      body = fb::CreateLoss(fbb, m.step, kind, m.loss_sum, m.correct, m.samples, m.wafers).Union(), type = fb::ControlBody::Loss;
      break;
    case ControlKind::StepDone:
      body = fb::CreateStepDone(fbb, m.step, m.skipped_updates).Union(), type = fb::ControlBody::StepDone;
      break;
  }
  fbb.Finish(fb::CreateControl(fbb, type, body), fb::ControlIdentifier());
  return std::make_shared<const Buffer>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

namespace {

bool known_pass(fb::Pass p) { return p == fb::Pass::Forward || p == fb::Pass::Backward; }
bool known_kind(fb::StepKind k) { return k == fb::StepKind::Train || k == fb::StepKind::Eval; }

}  // namespace

ControlMessage decode_control(const Buffer& buffer, const std::string& what, const ControlExpectation* expect) {
  flatbuffers::Verifier verifier(buffer.data(), buffer.size());
  if (buffer.size() < 8 || !fb::ControlBufferHasIdentifier(buffer.data()) || !fb::VerifyControlBuffer(verifier))
    throw UsageError(what + ": not a valid control message (" + std::to_string(buffer.size()) +
                     " bytes failed the FlatBuffers verifier: corrupt or truncated)");
  const fb::Control* c = fb::GetControl(buffer.data());
  ControlMessage m;
  auto bad = [&](const std::string& field, const std::string& got, const std::string& expected) {
    return UsageError(what + ": field '" + field + "': " + got + ", expected " + expected);
  };
  switch (c->body_type()) {
    case fb::ControlBody::StepBegin: {
      const auto* b = c->body_as_StepBegin();
      if (!known_kind(b->kind())) throw bad("kind", std::to_string(int(b->kind())), "Train (0) or Eval (1)");
      if (b->samples() == 0) throw bad("samples", "0", "a batch of at least one sample");
      m.kind = ControlKind::StepBegin, m.step = b->step(), m.eval = b->kind() == fb::StepKind::Eval, m.samples = b->samples();
      break;
    }
    case fb::ControlBody::InputCredit:
      m.kind = ControlKind::InputCredit, m.step = c->body_as_InputCredit()->step();
      break;
    case fb::ControlBody::StreamCredit: {
      const auto* b = c->body_as_StreamCredit();
      if (!known_pass(b->pass())) throw bad("pass", std::to_string(int(b->pass())), "Forward (0) or Backward (1)");
      m.kind = ControlKind::StreamCredit, m.step = b->step(), m.layer_index = b->layer_index(), m.pass = StreamPass(b->pass()), m.started = b->started();
      break;
    }
    case fb::ControlBody::StreamResume: {
      const auto* b = c->body_as_StreamResume();
      if (!known_pass(b->pass())) throw bad("pass", std::to_string(int(b->pass())), "Forward (0) or Backward (1)");
      if (b->bytes() == 0) throw bad("bytes", "0", "the bytes that follow (a stream with nothing left sends no StreamResume)");
      m.kind = ControlKind::StreamResume, m.step = b->step(), m.layer_index = b->layer_index(), m.pass = StreamPass(b->pass()), m.bytes = b->bytes();
      break;
    }
    case fb::ControlBody::Loss: {
      const auto* b = c->body_as_Loss();
      if (!known_kind(b->kind())) throw bad("kind", std::to_string(int(b->kind())), "Train (0) or Eval (1)");
      if (b->correct() > b->samples())
        throw bad("correct", std::to_string(b->correct()), "at most the " + std::to_string(b->samples()) + " samples scored");
      if (b->wafers() == 0) throw bad("wafers", "0", "at least the one wafer that scored it");
      m.kind = ControlKind::Loss, m.step = b->step(), m.eval = b->kind() == fb::StepKind::Eval, m.loss_sum = b->loss_sum();
      m.correct = b->correct(), m.samples = b->samples(), m.wafers = b->wafers();
      break;
    }
    case fb::ControlBody::StepDone:
      m.kind = ControlKind::StepDone, m.step = c->body_as_StepDone()->step(), m.skipped_updates = c->body_as_StepDone()->skipped_updates();
      break;
    default:
      throw bad("body_type", std::to_string(int(c->body_type())), "a known control message (1-6)");
  }
  if (!expect) return m;
  if (m.kind != expect->kind) throw bad("body_type", control_kind_name(m.kind), std::string(control_kind_name(expect->kind)) + " here");
  if (expect->layers && (m.kind == ControlKind::StreamCredit || m.kind == ControlKind::StreamResume) && m.layer_index >= expect->layers)
    throw bad("layer_index", std::to_string(m.layer_index), "below the model's " + std::to_string(expect->layers) + " layers");
  if (expect->wafers && m.kind == ControlKind::Loss && m.wafers > expect->wafers)
    throw bad("wafers", std::to_string(m.wafers), "at most the cluster's " + std::to_string(expect->wafers));
  return m;
}

}  // namespace wse
