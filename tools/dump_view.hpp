#pragma once
// An activity dump as the viewers see it: per-PE metrics as one W x H grid per interval, per-link
// metrics as one value per link per interval. Produced by reading an ActivityDump FlatBuffer
// (schemas/activity_dump.fbs) through the verifier; shared by `wse viz` and the trace tools.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wse {

struct MetricGrid {
  std::string name;  // e.g. "fmac_cycles", "sram_bytes"
  std::string unit;  // "cycles", "bytes", "wavelets"
  std::vector<std::vector<uint32_t>> frames;  // [interval][y * width + x]
  // A tile grid drawn from a link metric (viz::tile_metrics): the index of that metric in
  // DumpView::link_metrics, whose per-link values a summary over intervals must start from.
  int32_t from_links = -1;
};

struct LinkInfo {
  uint32_t x = 0, y = 0;  // source tile
  uint8_t dir = 0;        // 0 N, 1 E, 2 S, 3 W, 4 RAMP (as fabric::Dir)
  uint8_t kind = 0;       // 0 hop, 1 ramp down (router -> PE), 2 ramp up (PE -> router), 3 egress
};

// A router lane: one colour's buffer at one router, with the tx directions it may use.
struct LaneInfo {
  uint32_t x = 0, y = 0;  // the router's tile
  uint8_t colour = 0;
  uint8_t tx = 0;         // bit d: sends toward direction d (0 N, 1 E, 2 S, 3 W, 4 RAMP)
};

// A wafer-wide number per interval.
struct SeriesView {
  std::string name, unit;
  std::vector<uint64_t> values;  // [interval]
};

struct DumpView {
  uint32_t width = 0, height = 0;
  std::string machine, layer, pass;
  uint64_t interval_cycles = 0, cycles = 0;
  std::vector<uint64_t> interval_starts;  // cycle each interval starts at
  std::vector<MetricGrid> pe_metrics;
  std::vector<LinkInfo> links;
  std::vector<MetricGrid> link_metrics;   // frames are [interval][link index], not grids
  // Added by the recorder's reader (not used by every viewer):
  uint64_t start_cycle = 0;               // wafer clock at the start; interval_starts count from it
  std::vector<uint32_t> tiles;            // tile ids (y * width + x) the dump stores; others are all 0
  uint32_t colours = 0;
  std::vector<MetricGrid> colour_metrics; // frames are [interval][colour], summed over routers
  std::vector<SeriesView> series;         // ingress_wavelets, egress_wavelets
  std::vector<MetricGrid> sram_buffers;   // one frame (a W x H grid) per named SRAM buffer, at run end
  std::vector<LaneInfo> lanes;            // router lanes (empty in dumps written before they were recorded)
  std::vector<MetricGrid> lane_metrics;   // frames are [interval][lane]: wavelets, backpressure_cycles

  const MetricGrid* pe_metric(const std::string& name) const {
    for (const auto& m : pe_metrics)
      if (m.name == name) return &m;
    return nullptr;
  }
  const MetricGrid* link_metric(const std::string& name) const {
    for (const auto& m : link_metrics)
      if (m.name == name) return &m;
    return nullptr;
  }
  const MetricGrid* lane_metric(const std::string& name) const {
    for (const auto& m : lane_metrics)
      if (m.name == name) return &m;
    return nullptr;
  }
  uint64_t interval_length(size_t k) const {
    return (k + 1 < interval_starts.size() ? interval_starts[k + 1] : cycles) - interval_starts[k];
  }
};

// Reads and verifies a dump file. Throws wse::UsageError naming the file on a missing, truncated
// or corrupt dump.
DumpView load_dump_view(const std::filesystem::path& path);

}  // namespace wse
