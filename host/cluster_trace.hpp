#pragma once
// The cluster's side of a trace: one training step's timeline (cluster/timeline.hpp, as
// Cluster::step_timeline gives it) written to a trace sink as a track group per actor (MemoryX,
// each SwarmX node, each wafer, each input worker, the user node), its spans as slices, and the
// step's critical path on a track of its own. Times are cluster cycles from the step's start (the
// previous step's end). Spans of one actor that overlap (MemoryX streams one layer while it
// updates another) go on separate lanes of that actor.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/trace_sink.hpp"

namespace wse {

struct ClusterTraceStats {
  uint64_t actors = 0, slices = 0;
};

// Writes and finishes `sink`. `step_timeline` is Cluster::step_timeline(step); `mesh` ("WxH") and
// `wafers` describe the cluster in the trace's description.
ClusterTraceStats write_cluster_trace(TraceSink& sink, const nlohmann::json& step_timeline, const std::string& machine,
                                      const std::string& mesh, uint32_t wafers);

}  // namespace wse
