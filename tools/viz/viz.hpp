#pragma once
// `wse viz`: pictures of an activity dump. For each metric: DIR/<metric>.png (the whole run: the
// sum over intervals for counters, the maximum for levels such as SRAM bytes), numbered frames
// DIR/frames/<metric>_NNNN.png (one per interval, or per run of intervals when there are more than
// max_frames, on one scale per metric so frames compare), and
// one self-contained DIR/index.html viewer with every metric and interval embedded.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tools/dump_view.hpp"
#include "tools/pe_timelines.hpp"

namespace wse {
class OutputDir;
}

namespace wse::viz {

struct VizOptions {
  std::string metric;           // only this metric (PNG files); empty = all. The viewer always has all.
  bool frames = true;           // write the per-interval animation frames
  // At most this many frames a metric: beyond it, each frame covers a run of consecutive intervals
  // (their sum, or maximum for a level), as many as it takes. A dump of 35,000 intervals wrote
  // 35,000 PNGs a metric.
  uint32_t max_frames = 1000;
  bool html = true;             // write index.html
  uint64_t max_html_values = 4'000'000;  // cells x intervals x metrics embedded in the page
  uint32_t max_html_side = 256;          // cells per side of the embedded grid
  OutputDir* out = nullptr;     // the command's output directory (records what is written), or none
  const PeTimelines* timelines = nullptr;  // the PEs' task timelines for the viewer (from the trace), or none
  // Called after each picture with the pictures drawn and the pictures in all (a progress line:
  // thousands of frames take a minute).
  std::function<void(size_t done, size_t total)> progress;
};

struct VizResult {
  std::vector<std::string> metrics;           // the metrics drawn
  std::vector<std::filesystem::path> files;   // every file written
  uint32_t html_block = 1;                    // PEs per cell side in index.html
  size_t frames = 0, intervals_per_frame = 1;  // frames written a metric, and the intervals each covers
};

// Per-tile grids to draw: the dump's PE metrics, then one grid per link metric holding, for each
// tile, the maximum over the links leaving it (named "link_<name>", or <name> if it already
// starts with "link").
std::vector<MetricGrid> tile_metrics(const DumpView& dump);

// Whether a metric is a level (bytes held, queue occupancy) rather than a count per interval:
// levels are summarised over the run by their maximum, counts by their sum.
bool is_level(const MetricGrid& m);
// A picture's subtitle: mesh, machine, layer and pass, and the cycles [start, end] its values
// cover (a frame's, or the whole run's: what its counts are totals over).
std::string picture_subtitle(const DumpView& d, uint64_t start, uint64_t end);
// The run summary of a metric of `dump` (one of tile_metrics(dump)): per PE, the sum (counts) or
// maximum (levels) over the intervals [first, end) (by default all of them; a merged frame is
// the summary of its intervals). A link metric's tile is the largest of its links' summaries,
// each link summed on its own: the sum of each interval's largest link could exceed every link.
std::vector<uint32_t> run_summary(const DumpView& dump, const MetricGrid& m, size_t first = 0, size_t end = SIZE_MAX);

// Checks the shape of every grid against the mesh and the interval list; throws wse::UsageError.
void check_dump_view(const DumpView& dump);

// Writes the PNGs, frames and viewer into out_dir (created if needed). Throws wse::UsageError for
// an unknown metric or a malformed dump, wse::OutputError (a UsageError) if a file cannot be written.
VizResult write_viz(const DumpView& dump, const std::filesystem::path& out_dir, const VizOptions& opt = {});

}  // namespace wse::viz
