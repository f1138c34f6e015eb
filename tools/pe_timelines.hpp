#pragma once
// Each PE's task and DSD-op timeline, as the HTML viewer shows it for a clicked PE: per thread a
// list of bars, where a bar is one slice of the trace or a run of back-to-back slices with the
// same name (a per-wavelet task repeated 200 times is one bar "x 200"; at the viewer's scale they
// would be drawn as one anyway). Read from a native trace (`wse trace` writes DIR/trace.pftrace).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabric/geometry.hpp"
#include "tools/trace_sink.hpp"

namespace wse {

struct TimelineBar {
  Cycle start = 0, end = 0;
  uint32_t name = 0;   // index in PeTimelines::names
  uint32_t count = 1;  // slices merged into this bar
};

struct PeTimelines {
  std::vector<std::string> names;
  // (x, y) -> thread (0 = main, k + 1 = microthread k) -> bars in time order.
  std::map<std::pair<uint32_t, uint32_t>, std::map<uint32_t, std::vector<TimelineBar>>> pes;
  uint64_t bars = 0, slices = 0;
  bool truncated = false;        // stopped at max_bars: bars from `complete_until` on may be missing
  Cycle complete_until = kNever;
  std::optional<TraceScope> scope;  // what the trace kept (its description), when it says
};

// Reads `trace` (checked by read_pftrace) and keeps the bars of PEs inside a width x height mesh,
// at most `max_bars` of them. `run` is TraceInfo::describe() of the dump the trace goes with: a
// trace whose top-level tracks describe another run is refused (traces written before the
// description existed carry none and are taken as they are). Throws UsageError naming the file if
// it is malformed, of another run, or names a PE outside the mesh.
PeTimelines load_pe_timelines(const std::filesystem::path& trace, uint32_t width, uint32_t height, uint64_t max_bars,
                              const std::string& run);

}  // namespace wse
