#pragma once
// `wse trace CONFIG [--layer NAME] [--pass fwd|bwd] [--interval CYCLES] --out DIR [--rect ...]`:
// runs a config like `wse run`, recording one layer (for GEMV: the whole kernel, layer "gemv") and
// writes DIR/activity.wsad (ActivityDump FlatBuffer), DIR/trace.json (Perfetto) and
// DIR/report.json (the run report plus "congestion" and "sram" sections).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "host/congestion.hpp"
#include "host/config.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {

struct TraceOptions {
  std::filesystem::path config;
  std::string layer;  // empty = the config's only layer
  std::string pass = "fwd";
  Cycle interval = 1000;
  std::filesystem::path out = "out";
  unsigned threads = 1;
  std::optional<TileRect> rect;  // PEs whose tasks go into trace.json; default the kernel's top-left 4x4
  size_t top_n = 10;
  ProgressFn progress;
  bool overwrite = false;  // replace the previous wse run in `out` (io/output_dir.hpp)
  std::string command;     // the command line, recorded in out/.wse-run
};

struct TraceResult {
  nlohmann::json report;
  std::filesystem::path dump_file, trace_file, report_file;
  uint64_t dump_bytes = 0;
  size_t intervals = 0, stored_tiles = 0, traced_pes = 0;
  CongestionProfile congestion;
  SramProfile sram;
};

// Parses "x0,y0,x1,y1" (inclusive corners) into a half-open rectangle. Throws UsageError.
TileRect parse_rect(const std::string& text);

TraceResult run_trace(const TraceOptions& opt);
void print_trace_summary(std::FILE* out, const TraceResult& r, size_t top_n);

}  // namespace wse
