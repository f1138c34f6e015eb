#pragma once
// What each actor did when: spans of simulated cycles (MemoryX streaming a layer or updating it,
// a SwarmX node broadcasting or reducing, a wafer running a pass), each naming the span that
// made it wait last (its cause). The step's critical path is the chain of causes back from the
// step's last span; its segments are contiguous, so they add up to the step's cycles.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/message.hpp"

namespace wse {

struct Span {
  std::string what;   // "stream fc1 fwd", "update fc2", "fc3 bwd", "reduce fc1", ...
  uint64_t step = 0;
  Cycle start = 0, end = 0;
  SpanId cause = kNoSpan;
  // When what this span waited on from its cause was done, if before the cause's end (0: at its
  // end). The critical path ends the cause's segment there: a SwarmX reduce that ended before the
  // wafer pass whose gradient it adds was dropped as a cause, and the step before it charged to
  // the reduce.
  Cycle cause_at = 0;
};

// One actor's spans; the actor appends, the timeline reads them once the run is paused.
struct ActorTimeline {
  std::string actor;
  std::vector<Span> spans;
};

// A candidate cause for a span: a predecessor span and when it ended. The latest one that ended
// no later than the span itself is its cause.
struct CauseCandidate {
  SpanId span = kNoSpan;
  Cycle end = 0;
};
SpanId latest_cause(std::initializer_list<CauseCandidate> candidates, Cycle span_end);
// The same, with when it ended (kNoSpan and 0 when there is none).
CauseCandidate latest_candidate(std::initializer_list<CauseCandidate> candidates, Cycle span_end);

struct CriticalSegment {
  std::string actor, what;
  Cycle from = 0, to = 0;
};

class Timeline {
 public:
  explicit Timeline(const std::vector<const ActorTimeline*>& actors) : actors_(actors) {}
  const Span& span(SpanId id) const { return actors_[id >> 32]->spans[id & 0xffffffffu]; }
  const std::string& actor(SpanId id) const { return actors_[id >> 32]->actor; }
  // The chain of causes back from `last` to `boundary` (the previous step's end), oldest first,
  // each segment from where the one before it ended to where its span ended.
  std::vector<CriticalSegment> critical_path(SpanId last, Cycle boundary) const;
  // Every span of `step`, per actor: {"actor": [[what, start, end], ...]}.
  nlohmann::json spans_json(uint64_t step) const;

 private:
  std::vector<const ActorTimeline*> actors_;
};

}  // namespace wse
