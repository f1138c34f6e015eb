#pragma once
// The trace of one recorded layer (or kernel), built while it runs: an ActivityObserver that turns
// each interval's counters and the traced PEs' slices into tracks, slices and counter points on a
// TraceSink (native Perfetto or JSON), so nothing but one interval is ever held.
//
// Tracks (docs/activity-dumps.md lists what each means):
//   Streams (MemoryX, host)   ingress / egress stream phases; wavelets per cycle in and out
//   Fabric (layer pass)       SRAM in use, link utilization (max, mean), backpressure, hops per
//                             cycle; per colour: wavelets per cycle and backpressure cycles
//   PEs (layer pass)          rows (and blocks of 64 rows on big meshes) > "PE (x,y)": the main
//                             thread's task and DSD-op slices, a child track per microthread
//                             that ran an op, and counters: SRAM bytes, input queue wavelets,
//                             busiest link utilization, link backpressure cycles
//   Wavelet paths             per --flow colour@PE: a track per router on the colour's route
//                             from that PE, a slice per interval it forwarded wavelets, linked by
//                             flows from hop to hop and on to the receiving PEs' tasks
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/trace_sink.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {

enum class TraceDetail : uint8_t { All, Tasks, Counters };

// A wavelet path to draw: colour `colour` as sent by the PE at `from` (along its static route).
struct FlowRequest {
  Colour colour = 0;
  Coord from;
};

struct LayerTraceOptions {
  TraceDetail detail = TraceDetail::All;
  TileRect pes;                    // the PEs with tracks (clipped to the mesh)
  Cycle from = 0, to = kNever;     // cycles from the start of the recording: only what overlaps [from, to)
  std::vector<Colour> colours;     // colours with their own counters; empty = every colour with a lane
  std::vector<FlowRequest> flows;
};

struct LayerTraceStats {
  uint64_t slices = 0, counter_points = 0;
  size_t pes = 0;
};

class LayerTrace : public ActivityObserver {
 public:
  // Declares the tracks. `rec` must be the recorder this observes (set_observer(this)), with
  // trace_tasks(opt.pes) called for the slices (not needed with TraceDetail::Counters).
  LayerTrace(TraceSink& sink, const ActivityRecorder& rec, LayerTraceOptions opt);
  void on_interval(const ActivityRecorder& rec, const IntervalFrame& f, std::span<const TracedPe> traced) override;
  // After the run: the stream phases, then the sink's file is committed.
  void finish(const ActivityRecorder& rec);
  const LayerTraceStats& stats() const { return stats_; }

  // How a task or op slice is named and what arguments it carries (shared with the tests).
  static std::string task_name(const Program* program, const TaskCost& t);

 private:
  struct PeTracks {
    Coord coord;
    uint32_t tile_index = 0;            // in rec.tiles()
    uint32_t links_begin = 0, links_end = 0;  // in link_of_pe_
    TrackId main = 0, sram = 0, queue = 0, link_util = 0, link_bp = 0;
    std::vector<TrackId> uts;           // per microthread, 0 until it runs an op
    const Program* program = nullptr;
  };
  struct PathHop {
    TileId tile = 0;
    uint32_t lane = 0;        // in rec.lanes()
    int parent = -1;          // hop index, -1 for the first
    TrackId track = 0;
  };
  struct Path {
    FlowRequest req;
    std::vector<PathHop> hops;
    std::vector<std::pair<int, Coord>> deliveries;  // hop index -> PE it delivers to
  };
  void build_paths(const ActivityRecorder& rec, TrackId parent);
  void emit_slices(const TracedPe& log, PeTracks& pe, Cycle start_cycle);
  void emit_paths(const IntervalFrame& f, const std::vector<uint64_t>& receivers);

  TraceSink& sink_;
  LayerTraceOptions opt_;
  std::vector<PeTracks> pes_;
  std::vector<uint32_t> link_of_pe_;
  TrackId pes_group_ = 0, memoryx_ = 0, host_ = 0, ingress_ = 0, egress_ = 0;
  TrackId sram_total_ = 0, util_max_ = 0, util_mean_ = 0, bp_total_ = 0, hops_ = 0;
  std::vector<std::pair<Colour, std::pair<TrackId, TrackId>>> colour_tracks_;
  std::vector<uint32_t> hop_links_;  // indices of hop links (for wavelet hops per cycle)
  std::vector<Path> paths_;
  // Receiving PEs' first task on a path's colour in an interval: the flows that end there.
  std::vector<std::pair<Coord, std::pair<Colour, uint64_t>>> pending_in_;
  LayerTraceStats stats_;
};

}  // namespace wse
