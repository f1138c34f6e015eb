#pragma once
// What an ActivityRecorder hands to an observer (a trace writer) at every sample boundary: the
// interval's counters for every stored tile, link, router lane and colour, and the slices that the
// traced PEs logged since the last boundary. The observer runs with every worker paused, so it
// may read the wafer; the slices are cleared when it returns, so a trace writer that streams them
// out keeps one interval in memory, however long the run and however many PEs are traced.
#include <cstdint>
#include <span>
#include <vector>

#include "pe/pe.hpp"

namespace wse {

class ActivityRecorder;

// Tasks and DSD ops one traced PE ran since the last sample, in the order the PE logged them
// (TaskCost::start is the wafer clock; per thread they come in time order).
struct TracedPe {
  Coord coord;
  std::vector<TaskCost> tasks;
};

// One interval's counters. Per-tile vectors follow ActivityRecorder::tiles(), per-link ones
// Mesh::links(), per-lane ones ActivityRecorder::lanes(), per-colour ones the colour number.
struct IntervalFrame {
  size_t index = 0;
  Cycle start = 0, end = 0;  // cycles from the start of the recording, [start, end)
  std::vector<uint64_t> receive, fmac, move, send, stall_backpressure, setup, tasks, wavelets_in, wavelets_out, macs;
  std::vector<uint32_t> sram_bytes, sram_high_water, input_occupancy;  // levels at the boundary
  std::vector<uint64_t> link_wavelets, link_backpressure;
  std::vector<uint64_t> lane_wavelets, lane_backpressure;
  std::vector<uint64_t> colour_wavelets, colour_backpressure;
  uint64_t ingress_wavelets = 0, egress_wavelets = 0;
};

class ActivityObserver {
 public:
  virtual ~ActivityObserver() = default;
  // After interval `f` is recorded. `traced` holds every traced PE (row-major), each with the
  // slices it logged since the last sample.
  virtual void on_interval(const ActivityRecorder& rec, const IntervalFrame& f, std::span<const TracedPe> traced) = 0;
};

}  // namespace wse
