#pragma once
// Where a recorded layer's trace goes: a tree of tracks (groups, slice tracks, counter tracks)
// and the slices and counter points on them, written as they arrive. Two formats implement it:
// Perfetto's native protobuf (tools/pftrace_writer.hpp, the default) and Chrome trace-event
// JSON (tools/json_trace_writer.hpp, for small traces). The trace builder
// (tools/layer_trace.hpp) decides what goes in; a sink only encodes it, so both formats hold the
// same content.
//
// Contract (what lets a sink stream with bounded memory): slices on one track arrive in time
// order and do not overlap; counter points arrive in non-decreasing time over all counter tracks;
// a track is declared before anything is put on it. Times are fabric cycles from the start of
// the recording.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fabric/geometry.hpp"

namespace wse {

using TrackId = uint64_t;  // 0 = no parent (a top-level track)

// What a layer trace holds of its run: the PEs with tracks, the window of cycles (from the
// layer's start) whose slices it keeps, and whether PEs log slices at all (--detail counters: no).
// Written after the run's description, so that `wse viz` can tell a PE or an interval the trace
// left out from one that ran nothing.
struct TraceScope {
  uint32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // [x0, x1) x [y0, y1)
  Cycle from = 0, to = kNever;  // kNever: to the end
  bool pe_slices = true;
  std::string text() const {
    return "scope pes " + std::to_string(x0) + "," + std::to_string(y0) + "," + std::to_string(x1) + "," + std::to_string(y1) +
           " cycles " + std::to_string(from) + "," + (to == kNever ? std::string("end") : std::to_string(to)) + " pe_slices " +
           (pe_slices ? "1" : "0");
  }
};

struct TraceInfo {
  std::string machine, layer, pass, mesh;
  uint64_t interval_cycles = 0, start_cycle = 0;
  uint32_t wafers = 0;  // a cluster trace (pass "cluster", no intervals): the wafers of the step
  std::optional<TraceScope> scope;  // a layer trace's (native traces write it after describe())
  // What run the trace is of, in words: written into a native trace (its top-level tracks'
  // descriptions) so that `wse viz` can tell the dump's own trace from another run's.
  std::string describe() const {
    if (pass == "cluster")
      return "wse trace of " + layer + " across the cluster's actors: " + std::to_string(wafers) + " wafer(s), each a " + mesh + " " +
             machine + " mesh, from wafer cycle " + std::to_string(start_cycle);
    return "wse trace of " + layer + " " + pass + " on a " + mesh + " " + machine + " mesh, from wafer cycle " +
           std::to_string(start_cycle) + ", intervals of " + std::to_string(interval_cycles) + " cycles";
  }
};

// A slice argument: an unsigned number or a string.
struct TraceArg {
  std::string_view name;
  uint64_t number = 0;
  std::string_view text;  // when not empty, the argument is this string
};

enum class CounterUnit : uint8_t { Count, Bytes, Ratio };

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin(const TraceInfo& info) = 0;
  // Tracks. `rank` orders siblings (lower first).
  virtual TrackId group(TrackId parent, std::string_view name, int rank) = 0;
  virtual TrackId slice_track(TrackId parent, std::string_view name, int rank) = 0;
  virtual TrackId counter_track(TrackId parent, std::string_view name, CounterUnit unit, int rank) = 0;
  // A slice [start, end) on a slice track. `flows_out` start (or continue) flows at this slice;
  // `flows_in` end there.
  virtual void slice(TrackId track, Cycle start, Cycle end, std::string_view name, std::span<const TraceArg> args,
                     std::span<const uint64_t> flows_out = {}, std::span<const uint64_t> flows_in = {}) = 0;
  // A counter's value from `at` on; false when it was not written, the track holding that value
  // already (a point per change: what a report counts as the trace's counter points).
  virtual bool counter(TrackId track, Cycle at, double value) = 0;
  // Writes what is buffered and commits the file (written to a temporary name until then).
  virtual void finish() = 0;
  virtual uint64_t bytes_written() const = 0;
};

}  // namespace wse
