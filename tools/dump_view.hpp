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
};

struct LinkInfo {
  uint32_t x = 0, y = 0;  // source tile
  uint8_t dir = 0;        // 0 N, 1 E, 2 S, 3 W, 4 RAMP (as fabric::Dir)
};

struct DumpView {
  uint32_t width = 0, height = 0;
  std::string machine, layer, pass;
  uint64_t interval_cycles = 0, cycles = 0;
  std::vector<uint64_t> interval_starts;  // cycle each interval starts at
  std::vector<MetricGrid> pe_metrics;
  std::vector<LinkInfo> links;
  std::vector<MetricGrid> link_metrics;   // frames are [interval][link index], not grids

  const MetricGrid* pe_metric(const std::string& name) const {
    for (const auto& m : pe_metrics)
      if (m.name == name) return &m;
    return nullptr;
  }
};

// Reads and verifies a dump file. Throws wse::UsageError naming the file on a missing, truncated
// or corrupt dump.
DumpView load_dump_view(const std::filesystem::path& path);

}  // namespace wse
