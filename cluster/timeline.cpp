#include "cluster/timeline.hpp"

#include <algorithm>

namespace wse {

CauseCandidate latest_candidate(std::initializer_list<CauseCandidate> candidates, Cycle span_end) {
  CauseCandidate best;
  for (const CauseCandidate& c : candidates) {
    if (c.span == kNoSpan || c.end > span_end) continue;
    if (best.span == kNoSpan || c.end > best.end) best = c;
  }
  return best;
}

SpanId latest_cause(std::initializer_list<CauseCandidate> candidates, Cycle span_end) { return latest_candidate(candidates, span_end).span; }

std::vector<CriticalSegment> Timeline::critical_path(SpanId last, Cycle boundary) const {
  std::vector<CriticalSegment> path;
  Cycle until = 0;  // where the span after it stopped waiting on it (0: its own end)
  for (SpanId id = last; id != kNoSpan;) {
    const Span& s = span(id);
    const Cycle to = until && until < s.end ? until : s.end;
    if (to <= boundary) break;
    path.push_back({actor(id), s.what, boundary, to});
    until = s.cause_at;
    id = s.cause;
  }
  std::reverse(path.begin(), path.end());
  // Each segment starts where the one before it ended (the first at the boundary). A span can end
  // before its cause does: a wafer pass not yet timed by a cycle-level run (training.detail: none)
  // takes one cycle from its stream's first byte, before the broadcast of the rest has ended. Its
  // segment is then empty, never negative (it was 2^64 - 576 cycles), and the segments still add
  // up to the step's cycles.
  for (size_t i = 1; i < path.size(); ++i) path[i].from = path[i - 1].to, path[i].to = std::max(path[i].to, path[i].from);
  return path;
}

nlohmann::json Timeline::spans_json(uint64_t step) const {
  nlohmann::json j = nlohmann::json::object();
  for (const ActorTimeline* a : actors_) {
    nlohmann::json list = nlohmann::json::array();
    for (const Span& s : a->spans)
      if (s.step == step) list.push_back({s.what, s.start, s.end});
    if (!list.empty()) j[a->actor] = std::move(list);
  }
  return j;
}

}  // namespace wse
