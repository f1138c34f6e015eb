#pragma once
// `wse trace CONFIG [--layer NAME] [--pass fwd|bwd] [--interval CYCLES] --out DIR [--pes RECT]
// [--from C] [--to C] [--detail all|tasks|counters] [--colours LIST] [--flow C@X,Y] [--format
// pftrace|json]`: runs a config like `wse run`, recording one layer (for GEMV: the whole kernel,
// layer "gemv") and writes DIR/activity.wsad (ActivityDump FlatBuffer), DIR/trace.pftrace
// (native Perfetto, streamed as the layer runs; DIR/trace.json with --format json) and
// DIR/report.json (the run report plus "congestion", "sram" and "trace" sections).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "host/congestion.hpp"
#include "host/config.hpp"
#include "tools/layer_trace.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {

struct TraceOptions {
  std::filesystem::path config;
  std::string layer;  // empty = the config's only layer
  std::string pass = "fwd";
  Cycle interval = 1000;
  std::filesystem::path out = "out";
  unsigned threads = 1;
  std::optional<TileRect> rect;  // PEs with tracks in the trace; default the whole mesh
  std::string format = "pftrace";  // or "json"
  TraceDetail detail = TraceDetail::All;
  Cycle from = 0, to = kNever;     // cycles from the start of the traced layer
  std::vector<Colour> colours;     // colours with their own counters (default all)
  std::vector<FlowRequest> flows;
  size_t top_n = 10;
  ProgressFn progress;
  bool overwrite = false;  // replace the previous wse run in `out` (io/output_dir.hpp)
  std::string command;     // the command line, recorded in out/.wse-run
};

struct TraceResult {
  nlohmann::json report;
  std::filesystem::path dump_file, trace_file, report_file;
  uint64_t dump_bytes = 0, trace_bytes = 0;
  // Training configs: the cluster's actors over the traced step (host/cluster_trace.hpp).
  std::filesystem::path cluster_file;
  uint64_t cluster_bytes = 0, cluster_slices = 0;
  size_t intervals = 0, stored_tiles = 0, traced_pes = 0;
  LayerTraceStats trace_stats;
  CongestionProfile congestion;
  SramProfile sram;
};

// Parses "x0,y0,x1,y1" (inclusive corners) into a half-open rectangle. Throws UsageError.
TileRect parse_rect(const std::string& text, const std::string& flag = "--pes");
// "3,5,7" -> colours (each below 64). Throws UsageError naming --colours.
std::vector<Colour> parse_colours(const std::string& text);
// "C@X,Y" -> a wavelet path request. Throws UsageError naming --flow.
FlowRequest parse_flow(const std::string& text);
TraceDetail parse_detail(const std::string& text);

TraceResult run_trace(const TraceOptions& opt);
void print_trace_summary(std::FILE* out, const TraceResult& r, size_t top_n);

}  // namespace wse
