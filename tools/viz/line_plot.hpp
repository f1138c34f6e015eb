#pragma once
// A line chart as a PNG, drawn with the project's own raster and font (tools/viz/image.hpp,
// font.hpp): a title, axes with labelled ticks at round values, light grid lines, one polyline
// per series and a legend. For training curves (loss per step, accuracy per epoch). A point whose
// y is not finite is a gap in its line, its x still on the axis.
#include <filesystem>
#include <string>
#include <vector>

#include "tools/viz/image.hpp"

namespace wse::viz {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length; drawn in order
  Rgb colour;
  bool markers = false;      // a small square at each point (for few points)
};

struct LinePlot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  uint32_t width = 800, height = 480;
  bool x_whole = false;  // x counts whole things (steps, epochs): ticks 1 or more apart
};

// Draws the chart. Throws std::invalid_argument when a series' x and y differ in length.
Image render_line_plot(const LinePlot& plot);
// Renders and writes it (atomically; the error names the path).
void write_line_plot(const std::filesystem::path& path, const LinePlot& plot);

}  // namespace wse::viz
