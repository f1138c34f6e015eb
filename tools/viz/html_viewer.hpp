#pragma once
// The self-contained HTML viewer: one page, no network, the data embedded as JSON in a
// <script type="application/json" id="wse-data"> element. See docs/visualization.md.
#include <cstdint>
#include <string>
#include <vector>

#include "tools/dump_view.hpp"
#include "tools/pe_timelines.hpp"

namespace wse::viz {

struct HtmlOptions {
  uint64_t max_values = 4'000'000;  // cells x intervals x metrics; above it the grid is downsampled
  uint32_t max_side = 256;          // cells per side
  uint64_t max_link_values = 4'000'000;  // links x intervals x 2 (+ the same per colour); above it colours, then links, are left out
};

// The embedded grid's block size (PEs per cell side) for a mesh, interval and metric count.
uint32_t html_block(uint32_t width, uint32_t height, size_t intervals, size_t metrics, const HtmlOptions& opt);

// The page for `metrics` (per-tile grids, as from tile_metrics) of `dump`, with the fabric's links
// (from the dump's link and lane metrics) and, when given, the PEs' timelines. `block` receives
// the downsampling factor used.
std::string render_html_viewer(const DumpView& dump, const std::vector<MetricGrid>& metrics, const HtmlOptions& opt,
                               uint32_t* block = nullptr, const PeTimelines* timelines = nullptr);

}  // namespace wse::viz
