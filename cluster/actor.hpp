#pragma once
// An actor of the cluster: MemoryX, a SwarmX node, a wafer, an input worker, the user node. It
// has its own clock (the cycle of the last message it handled), receives messages in the order of
// their arrival cycles, sends on its links, and records what it did as timeline spans. The
// runtime (cluster/runtime.hpp) calls receive() only when no message that could precede the one
// it hands over can still be sent, so an actor never sees its messages out of order.
#include <cstdint>
#include <string>
#include <vector>

#include "cluster/message.hpp"
#include "cluster/timeline.hpp"

namespace wse {

class Runtime;

// A one-way link between two actors: a latency, a bandwidth, and until when it is busy.
struct ActorLink {
  ActorId from = 0, to = 0;
  Cycle latency = 1;
  double bytes_per_cycle = 0;  // 0: no limit
  Cycle free = 0;              // its last byte so far has left the sender then
};

class Actor {
 public:
  explicit Actor(std::string name) { timeline_.actor = std::move(name); }
  virtual ~Actor() = default;
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  const std::string& name() const { return timeline_.actor; }
  ActorId id() const { return id_; }
  Cycle clock() const { return clock_; }
  const ActorTimeline& timeline() const { return timeline_; }
  // What it still waits for, for the diagnosis of a cluster that stopped short ("" if nothing).
  virtual std::string waiting_on() const { return ""; }

 protected:
  virtual void receive(const Message& m) = 0;

  // Sends on `link` (cut-through): the first byte leaves at `ready` or later (never before this
  // actor's clock, nor before the link is free), the last byte not before `last_ready`; the pace
  // is the slower of `in_rate` and the link's. Returns the message as sent (valid until the next
  // send), so a span made from its cycles can still be named as its cause.
  Message& send(LinkId link, MessageKind kind, uint64_t step, uint64_t bytes, std::vector<SharedBuffer> payload, Cycle ready,
                      SpanId cause, Cycle cause_end, Cycle last_ready = 0, double in_rate = 0);
  // The id the next span will get.
  SpanId next_span() const { return (SpanId(id_) << 32) | timeline_.spans.size(); }
  // Appends a span; returns its id.
  // `cause_at`: when what it waited on from its cause was done, if before the cause's end (0: at it).
  SpanId span(std::string what, uint64_t step, Cycle start, Cycle end, SpanId cause, Cycle cause_at = 0);
  const Span& span_at(SpanId id) const { return timeline_.spans[id & 0xffffffffu]; }
  Span& span_at(SpanId id) { return timeline_.spans[id & 0xffffffffu]; }
  const ActorLink& link(LinkId l) const;
  // "<what> from <sender> to <this actor>, <step>": how errors name a message.
  std::string about(const Message& m, const std::string& what) const;
  const std::string& actor_name(ActorId a) const;

 private:
  friend class Runtime;
  Runtime* runtime_ = nullptr;
  ActorId id_ = 0;
  Cycle clock_ = 0;
  uint64_t seq_ = 0;
  std::vector<Message> outbox_;
  ActorTimeline timeline_;
};

}  // namespace wse
