#pragma once
// One picture of one per-PE metric: the mesh as a grid of coloured cells (row 0, the north edge,
// at the top), x and y axis labels, a title, and a colour-bar legend with the scale's values.
// Meshes wider or taller than max_plot_px are downsampled: one cell then stands for a
// block x block square of PEs and shows their maximum (so hot spots never vanish), and the
// subtitle says so.
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "tools/viz/colour_scale.hpp"
#include "tools/viz/image.hpp"

namespace wse::viz {

struct HeatmapSpec {
  uint32_t width = 0, height = 0;   // mesh, in PEs
  std::span<const uint32_t> values;  // [y * width + x]
  std::string title, subtitle, unit;
  ColourScale scale;
  uint32_t max_plot_px = 1024;  // longest side of the plot area
  uint32_t target_plot_px = 640;  // small meshes get cells up to 32 px to reach about this
};

struct HeatmapLayout {
  int plot_x = 0, plot_y = 0;     // top-left pixel of the cell of PE (0,0)
  uint32_t cell_px = 1;           // side of one cell in pixels
  uint32_t block = 1;             // PEs per cell side (1 = no downsampling)
  uint32_t cells_x = 0, cells_y = 0;
  int legend_x = 0, legend_y = 0, legend_w = 0, legend_h = 0;  // the colour bar itself

  // Pixel at the centre of the cell that shows PE (x, y).
  int pe_px_x(uint32_t x) const { return plot_x + int((x / block) * cell_px + cell_px / 2); }
  int pe_px_y(uint32_t y) const { return plot_y + int((y / block) * cell_px + cell_px / 2); }
};

struct Heatmap {
  Image image;
  HeatmapLayout layout;
};

Heatmap render_heatmap(const HeatmapSpec& spec);

// Short label for a scale value: 1234, 12500, 125k, 3.4M, 1.2G (whole k from 100,000 up; M and G
// with one decimal).
std::string format_value(double v);

// The legend's five tick labels, top to bottom: hi, three quarters, half, a quarter, lo. A scale
// of one value (hi <= lo) has one label, "all <lo>", in the middle, the others empty.
std::array<std::string, 5> legend_labels(double lo, double hi);

// A line plot's axis label for value v on an axis of ticks `step` apart (1, 2 or 5 x 10^k, as the
// plot's ticks are) whose largest tick is `largest`: every label of the axis in one unit (k, M, G
// from the largest), with the decimals the step needs, so no two ticks print alike.
std::string format_tick(double v, double step, double largest);

}  // namespace wse::viz
