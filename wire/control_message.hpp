#pragma once
// Control messages (schemas/control.fbs) between the cluster's actors: a step begins, a wafer can
// take the next batch, a pass started (so MemoryX may send the rest of its stream), the rest of a
// stream follows, a step's loss, a step's updates are done. Encode, and decode through the
// FlatBuffers verifier and the meaning checks, like every message that crosses an actor boundary.
#include <cstdint>
#include <string>

#include "wire/weight_stream.hpp"

namespace wse {

enum class ControlKind : uint8_t { StepBegin = 1, InputCredit, StreamCredit, StreamResume, Loss, StepDone };
const char* control_kind_name(ControlKind k);

struct ControlMessage {
  ControlKind kind = ControlKind::StepBegin;
  uint64_t step = 0;
  bool eval = false;                      // StepBegin, Loss: an evaluation step (forward only)
  uint32_t samples = 0;                   // StepBegin: the global batch; Loss: samples scored
  uint32_t layer_index = 0;               // StreamCredit, StreamResume
  StreamPass pass = StreamPass::Forward;  // StreamCredit, StreamResume
  uint64_t started = 0;                   // StreamCredit: the cycle the pass started
  uint64_t bytes = 0;                     // StreamResume: bytes that follow
  double loss_sum = 0;                    // Loss
  uint32_t correct = 0, wafers = 0;       // Loss: correct predictions, wafers summed
  uint32_t skipped_updates = 0;           // StepDone
};

SharedBuffer encode_control(const ControlMessage& m);

// What the receiver knows the message must be.
struct ControlExpectation {
  ControlKind kind = ControlKind::StepBegin;
  uint32_t layers = 0;   // layer_index must be below this (0: not checked)
  uint32_t wafers = 0;   // Loss: at most this many wafers summed (0: not checked)
};

// A corrupt or contradictory buffer is a UsageError naming `what` and the field.
ControlMessage decode_control(const Buffer& buffer, const std::string& what, const ControlExpectation* expect = nullptr);

}  // namespace wse
