#pragma once
// A message between two of the cluster's actors: what it carries (FlatBuffers buffers from
// wire/, one per ingress column for a WeightStream) and when. Every message carries the cycle its
// first byte leaves the sender, the cycle it reaches the receiver (the receiver handles it then),
// and the cycle its last byte arrives: links are cut-through, so a stream can be handled
// while its tail is still on the way, and the pace it came at (bytes per cycle, the slowest link
// on its path) travels with it.
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/geometry.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

using ActorId = uint32_t;
using LinkId = uint32_t;
using SpanId = uint64_t;  // a timeline span: actor << 32 | index (cluster/timeline.hpp)
inline constexpr SpanId kNoSpan = ~SpanId{0};

enum class MessageKind : uint8_t { Control, WeightStream, GradientStream, InputBatch };
const char* message_kind_name(MessageKind k);

struct Message {
  MessageKind kind = MessageKind::Control;
  ActorId from = 0, to = 0;
  uint64_t step = 0;           // the step it belongs to (errors name it)
  Cycle sent = 0;              // first byte leaves the sender
  Cycle arrive = 0;            // first byte reaches the receiver: when the receiver handles it
  Cycle last = 0;              // last byte reaches the receiver
  double bytes_per_cycle = 0;  // the pace along its path (0: no limit)
  uint64_t bytes = 0;          // bytes it stands for on the links
  uint64_t total_bytes = 0;    // a WeightStream's whole size, when `bytes` is only its head
  uint32_t layer = 0;          // streams, gradients: the layer (for names; the payload says it too)
  bool backward = false;       // streams: the pass
  uint64_t seq = 0;            // the sender's count: ties between equal cycles go by (from, seq)
  SpanId cause = kNoSpan;      // the sender's timeline span that produced it
  // When what this message carries from that span was done (for the critical path): the span's
  // end, or earlier when the span goes on after it (a gradient's last byte leaves the wafer
  // before the pass's dX tail ends).
  Cycle cause_end = 0;
  std::vector<SharedBuffer> payload;
};

}  // namespace wse
