#pragma once
// Records what a wafer does while one layer (or kernel) runs: per-interval counters of every tile
// with a program or a route and of every link, written as an ActivityDump FlatBuffer
// (schemas/activity_dump.fbs). Independent of the kernel: it takes a finalized Wafer, names and
// an interval. An observer (a trace writer, wafer/activity_observer.hpp) gets every interval's
// counters and the task and DSD-op slices of the traced PEs as each sample is taken.
//
//   ActivityRecorder rec(wafer, {"fc1", "fwd"}, 1000);
//   rec.trace_tasks({0, 0, 16, 16});      // optional: log these PEs' slices ...
//   rec.set_observer(&writer);            // ... and hand them over at every sample
//   WaferRun run = wafer.run(max_cycles, rec.hooks(progress));
//   rec.write(dir / "activity.wsad");
//
// Samples are taken with every worker paused at interval boundaries (RunHooks::sample), so the
// dump and everything an observer sees is bit-identical at any thread count.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "wafer/activity_observer.hpp"
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

// A router lane (one colour's buffer at one router) as the dump names it: the tile, the colour and
// every tx direction the colour may use there (over all switch positions; bit d = fabric Dir d).
struct LaneRef {
  TileId tile = 0;
  Colour colour = 0;
  uint8_t tx = 0;
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
  static constexpr uint32_t kFormatVersion = 1;

  // `wafer` must be finalized and must outlive the recorder. interval >= 1. Construct it just
  // before the run to record, after that run's streams are loaded: it starts from the wafer's
  // clock and counters as they are (earlier runs are not in the dump).
  ActivityRecorder(Wafer& wafer, ActivityMeta meta, Cycle interval);
  ~ActivityRecorder();
  ActivityRecorder(const ActivityRecorder&) = delete;
  ActivityRecorder& operator=(const ActivityRecorder&) = delete;

  // Logs the tasks and DSD ops of the PEs with a program in `rect` (clipped to the mesh). The log
  // is drained at every sample: to the observer if there is one, else dropped.
  void trace_tasks(TileRect rect);
  // Called at every sample with the interval's counters and the traced PEs' new slices.
  void set_observer(ActivityObserver* o) { observer_ = o; }
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
  size_t traced_pes() const { return traced_.size(); }
  std::vector<StreamPhase> stream_phases() const;
  const Wafer& wafer() const { return wafer_; }
  const ActivityMeta& meta() const { return meta_; }
  // The tiles and lanes the dump stores, in its order (tiles with a program or a route).
  const std::vector<TileId>& tiles() const { return tiles_; }
  const std::vector<LaneRef>& lanes() const { return lanes_; }

 private:
  struct TilePrev {
    uint64_t receive = 0, fmac = 0, move = 0, send = 0, stall = 0, setup = 0, tasks = 0, in = 0, out = 0, macs = 0;
  };
  struct LinkPrev {
    uint64_t wavelets = 0, backpressure = 0;
  };
  void set_logs(bool on);
  void finish();
  static TilePrev tile_counters(const Pe& pe, Cycle boundary);
  std::vector<LinkPrev> colour_counters() const;
  uint64_t ingress_sent() const;
  // Egress arrivals before `before`, noting the recorded ones' first and last (egress_first_).
  uint64_t egress_arrived(Cycle before);

  Wafer& wafer_;
  ActivityMeta meta_;
  Cycle interval_;
  Cycle start_ = 0;  // the wafer clock when recording began
  Cycle last_boundary_ = 0;
  std::vector<TileId> tiles_;
  std::vector<TilePrev> tile_prev_;
  std::vector<LinkPrev> link_prev_;
  std::vector<LinkPrev> colour_prev_;
  std::vector<LaneRef> lanes_;
  std::vector<LinkPrev> lane_prev_;
  std::vector<uint32_t> last_active_;  // per stored tile: 1 + last interval with any activity (0 = none)
  uint64_t ingress_prev_ = 0, egress_prev_ = 0;
  Cycle egress_first_ = kNever, egress_end_ = 0;  // the first egress arrival recorded, and the last + 1
  // The recorder's memory so far (its columns, about), and the figure at which it next asks the
  // host for as much again: a trace of a run far longer than its interval grew until the kernel
  // killed the process; now it stops with the figure and what to change (check_growth).
  uint64_t bytes_ = 0, next_check_ = uint64_t(1) << 20;
  void check_growth(size_t k);  // after interval k's sample
  std::vector<Cycle> starts_;
  // Encoded columns: [metric][interval] varints, per the kPe*/kLink*/kColour* indices in the .cpp.
  std::vector<std::vector<std::vector<uint8_t>>> pe_cols_, link_cols_, colour_cols_, lane_cols_;
  std::vector<uint64_t> ingress_series_, egress_series_;
  std::vector<Cycle> ingress_first_ready_;
  std::vector<TracedPe> traced_;
  ActivityObserver* observer_ = nullptr;
  IntervalFrame frame_;  // the interval just sampled, for the observer (reused: no growth)
  std::vector<uint8_t> dump_;
  bool finished_ = false;
};

}  // namespace wse
