#pragma once
// A Perfetto / chrome://tracing trace (Chrome trace-event JSON) of one recorded layer: task slices
// on one track per traced PE, the off-wafer stream phases as slices, and counter tracks for SRAM
// occupancy, link utilization, backpressure and the edge streams, one point per dump interval.
// Timestamps are fabric cycles written as microseconds (1 us in the viewer = 1 cycle).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/dump_view.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {

nlohmann::json perfetto_trace(const DumpView& dump, const std::vector<TracedPe>& pes,
                              const std::vector<StreamPhase>& phases);
void write_perfetto(const std::filesystem::path& file, const nlohmann::json& trace);

}  // namespace wse
