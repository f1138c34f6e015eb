#pragma once
// Records what a wafer does while one layer (or kernel) runs: per-interval counters of every tile
// with a program or a route and of every link, written as an ActivityDump FlatBuffer
// (schemas/activity_dump.fbs); optionally the task slices of a small rectangle of PEs, for a
// Perfetto trace. Independent of the kernel: it takes a finalized Wafer, names and an interval.
//
//   ActivityRecorder rec(wafer, {"fc1", "fwd"}, 1000);
//   rec.trace_tasks({0, 0, 4, 4});
//   WaferRun run = wafer.run(max_cycles, rec.hooks(progress));
//   rec.write(dir / "activity.wsad");
//
// Samples are taken with every worker paused at interval boundaries (RunHooks::sample), so the
// dump is bit-identical at any thread count.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "wafer/wafer.hpp"

namespace wse {

struct ActivityMeta {
  std::string layer = "gemv";
  std::string pass = "fwd";
};

// A half-open rectangle of tiles [x0, x1) x [y0, y1).
struct TileRect {
  uint32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool contains(Coord c) const { return c.x >= x0 && c.x < x1 && c.y >= y0 && c.y < y1; }
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

// Every task one PE ran, in order (TaskCost::start is the wafer clock).
struct TracedPe {
  Coord coord;
  std::vector<TaskCost> tasks;
  bool truncated = false;  // stopped logging at kMaxTasksPerPe
};

// A phase of the off-wafer streams (MemoryX -> ingress, egress -> host), in cycles [start, end)
// from the start of the recording. The ingress end is known to the interval, the rest exactly.
struct StreamPhase {
  std::string name;   // "ingress stream", "egress stream"
  std::string track;  // "MemoryX", "host"
  Cycle start = 0, end = 0;
  uint64_t wavelets = 0;
};

class ActivityRecorder {
 public:
  static constexpr size_t kMaxTasksPerPe = 1u << 20;
  static constexpr uint32_t kFormatVersion = 1;

  // `wafer` must be finalized and must outlive the recorder. interval >= 1. Construct it just
  // before the run to record, after that run's streams are loaded: it starts from the wafer's
  // clock and counters as they are (earlier runs are not in the dump).
  ActivityRecorder(Wafer& wafer, ActivityMeta meta, Cycle interval);
  ~ActivityRecorder();
  ActivityRecorder(const ActivityRecorder&) = delete;
  ActivityRecorder& operator=(const ActivityRecorder&) = delete;

  // Logs the tasks of the PEs in `rect` (clipped to the mesh) during the run.
  void trace_tasks(TileRect rect);
  // Hooks for Wafer::run: samples at every interval boundary; `progress` is passed through.
  RunHooks hooks(ProgressFn progress = {});
  // One sample; called by the hooks with the workers paused and counters settled to `boundary`.
  void sample(Cycle boundary);

  // After the run: the dump as a FlatBuffer (finishes the recording on the first call).
  const std::vector<uint8_t>& dump();
  void write(const std::filesystem::path& file);

  Cycle interval() const { return interval_; }
  size_t intervals() const { return starts_.size(); }
  Cycle start_cycle() const { return start_; }
  Cycle cycles() const { return last_boundary_ - start_; }  // recorded so far
  const std::vector<TracedPe>& traced() const { return traced_; }
  std::vector<StreamPhase> stream_phases() const;

 private:
  struct TilePrev {
    uint64_t receive = 0, fmac = 0, move = 0, send = 0, stall = 0, tasks = 0, in = 0, out = 0, macs = 0;
  };
  struct LinkPrev {
    uint64_t wavelets = 0, backpressure = 0;
  };
  void finish();
  static TilePrev tile_counters(const Pe& pe, Cycle boundary);
  std::vector<LinkPrev> colour_counters() const;
  uint64_t ingress_sent() const;
  uint64_t egress_arrived(Cycle before) const;

  Wafer& wafer_;
  ActivityMeta meta_;
  Cycle interval_;
  Cycle start_ = 0;  // the wafer clock when recording began
  Cycle last_boundary_ = 0;
  std::vector<TileId> tiles_;
  std::vector<TilePrev> tile_prev_;
  std::vector<LinkPrev> link_prev_;
  std::vector<LinkPrev> colour_prev_;
  std::vector<uint32_t> last_active_;  // per stored tile: 1 + last interval with any activity (0 = none)
  uint64_t ingress_prev_ = 0, egress_prev_ = 0;
  std::vector<Cycle> starts_;
  // Encoded columns: [metric][interval] varints, per the kPe*/kLink*/kColour* indices in the .cpp.
  std::vector<std::vector<std::vector<uint8_t>>> pe_cols_, link_cols_, colour_cols_;
  std::vector<uint64_t> ingress_series_, egress_series_;
  std::vector<Cycle> ingress_first_ready_;
  std::vector<TracedPe> traced_;
  std::vector<uint8_t> dump_;
  bool finished_ = false;
};

}  // namespace wse
