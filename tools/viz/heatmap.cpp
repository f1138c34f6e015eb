#include "tools/viz/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tools/viz/font.hpp"

namespace wse::viz {
namespace {

constexpr Rgb kInk{34, 34, 34}, kGrey{120, 120, 120}, kFrame{90, 90, 90};

// Smallest step in {1, 2, 5} x 10^k whose labels, `step` PEs apart, leave room between them.
uint32_t tick_step(uint32_t pes, double px_per_pe, int label_px) {
  for (uint64_t decade = 1;; decade *= 10)
    for (uint64_t m : {1, 2, 5}) {
      const uint64_t step = m * decade;
      if (step * px_per_pe >= label_px + 8 || step >= pes) return uint32_t(step);
    }
}

}  // namespace

std::array<std::string, 5> legend_labels(double lo, double hi) {
  std::array<std::string, 5> out;
  // A scale of one value (a metric that is 0 everywhere): one label, "all 0", in the middle of a
  // bar of one colour; quarters of a made-up range would claim values the run never had.
  if (!(hi > lo)) {
    out[2] = "all " + format_value(lo);
    return out;
  }
  for (int i = 0; i < 5; ++i) out[size_t(i)] = format_value(lo + (hi - lo) * (4 - i) / 4.0);
  return out;
}

std::string format_tick(double v, double step, double largest) {
  // One axis's labels share a unit (the largest value's) and as many decimals as the step needs
  // in it: 2.310, 2.315, 2.320 where format_value gave 2.31, 2.31, 2.32.
  double unit = 1;
  const char* suffix = "";
  const double a = std::fabs(largest);
  if (a >= 1e9) unit = 1e9, suffix = "G";
  else if (a >= 1e6) unit = 1e6, suffix = "M";
  else if (a >= 1e5) unit = 1e3, suffix = "k";
  const double s = step / unit;
  const int decimals = s >= 1 || !(s > 0) ? 0 : std::min(12, int(std::ceil(-std::log10(s) - 1e-9)));
  const double x = std::fabs(v / unit) < s / 1e6 ? 0.0 : v / unit + 0.0;  // (a sum's rounding, and -0, print 0)
  char buf[64];
  if (std::fabs(x) >= 1e15) std::snprintf(buf, sizeof buf, "%.3g%s", x, suffix);  // beyond G: no 300-digit label
  else std::snprintf(buf, sizeof buf, "%.*f%s", decimals, x, suffix);
  return buf;
}

std::string format_value(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.1fG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (a >= 1e5) std::snprintf(buf, sizeof buf, "%.0fk", v / 1e3);
  else if (v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a < 10) std::snprintf(buf, sizeof buf, "%.2f", v);
  else if (a < 100) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

Heatmap render_heatmap(const HeatmapSpec& s) {
  if (s.width == 0 || s.height == 0) throw std::invalid_argument("render_heatmap: empty mesh");
  if (s.values.size() != size_t(s.width) * s.height)
    throw std::invalid_argument("render_heatmap: " + std::to_string(s.values.size()) + " values for a " +
                                std::to_string(s.width) + "x" + std::to_string(s.height) + " mesh");
  HeatmapLayout L;
  const uint32_t longest = std::max(s.width, s.height);
  L.block = (longest + s.max_plot_px - 1) / s.max_plot_px;
  L.cells_x = (s.width + L.block - 1) / L.block;
  L.cells_y = (s.height + L.block - 1) / L.block;
  L.cell_px = std::clamp<uint32_t>(s.target_plot_px / std::max(L.cells_x, L.cells_y), 1, 32);
  const int plot_w = int(L.cells_x * L.cell_px), plot_h = int(L.cells_y * L.cell_px);

  // Margins around the plot: title lines on top, y labels left, x labels below, legend right.
  const int pad = 10;
  const std::string max_x = std::to_string(s.width - 1), max_y = std::to_string(s.height - 1);
  const int ylabel_w = text_width(max_y);
  L.plot_x = pad + text_width("Y") + 6 + ylabel_w + 6;
  L.plot_y = pad + text_height(2) + 6 + text_height() + 14;
  const double lo = s.scale.lo, hi = s.scale.hi;
  const std::array<std::string, 5> labels = legend_labels(lo, hi);
  int legend_label_w = 0;
  for (const std::string& l : labels) legend_label_w = std::max(legend_label_w, text_width(l));
  L.legend_x = L.plot_x + plot_w + 28;
  L.legend_y = L.plot_y;
  L.legend_w = 16;
  L.legend_h = std::max(plot_h, 160);
  const int right = L.legend_x + L.legend_w + 6 + std::max(legend_label_w, text_width(s.unit) - 10) + pad;
  const int bottom = std::max(L.plot_y + plot_h + 6 + text_height() + 6 + text_height(), L.legend_y + L.legend_h) + pad;
  const int title_w = pad + std::max(text_width(s.title, 2), text_width(s.subtitle)) + pad;
  Image img(uint32_t(std::max(right, title_w)), uint32_t(bottom));

  draw_text(img, pad, pad, s.title, kInk, 2);
  draw_text(img, pad, pad + text_height(2) + 6, s.subtitle, kGrey);

  // Cells. A downsampled cell shows the maximum over its block of PEs.
  for (uint32_t cy = 0; cy < L.cells_y; ++cy)
    for (uint32_t cx = 0; cx < L.cells_x; ++cx) {
      uint32_t v = 0;
      for (uint32_t y = cy * L.block; y < std::min(s.height, (cy + 1) * L.block); ++y)
        for (uint32_t x = cx * L.block; x < std::min(s.width, (cx + 1) * L.block); ++x)
          v = std::max(v, s.values[size_t(y) * s.width + x]);
      img.fill_rect(L.plot_x + int(cx * L.cell_px), L.plot_y + int(cy * L.cell_px), L.cell_px, L.cell_px,
                    s.scale.colour(v));
    }
  img.frame_rect(L.plot_x - 1, L.plot_y - 1, plot_w + 2, plot_h + 2, kFrame);

  // Axes: ticks at multiples of a step, labels centred on the cell of that PE.
  const double px_per_pe = double(L.cell_px) / L.block;
  const uint32_t xstep = tick_step(s.width, px_per_pe, text_width(max_x));
  for (uint32_t x = 0; x < s.width; x += xstep) {
    const int px = L.pe_px_x(x);
    img.fill_rect(px, L.plot_y + plot_h + 1, 1, 4, kFrame);
    const std::string t = std::to_string(x);
    draw_text(img, px - text_width(t) / 2, L.plot_y + plot_h + 7, t, kInk);
  }
  draw_text(img, L.plot_x + plot_w / 2 - text_width("X") / 2, L.plot_y + plot_h + 7 + text_height() + 6, "X", kGrey);
  const uint32_t ystep = tick_step(s.height, px_per_pe, text_height() + 2);
  for (uint32_t y = 0; y < s.height; y += ystep) {
    const int py = L.pe_px_y(y);
    img.fill_rect(L.plot_x - 5, py, 4, 1, kFrame);
    const std::string t = std::to_string(y);
    draw_text(img, L.plot_x - 7 - text_width(t), py - text_height() / 2, t, kInk);
  }
  draw_text(img, pad, L.plot_y + plot_h / 2 - text_height() / 2, "Y", kGrey);

  // Legend: hi at the top, lo at the bottom, five labelled ticks, the unit above.
  for (int row = 0; row < L.legend_h; ++row) {
    const double t = !(hi > lo) ? 0.0 : L.legend_h > 1 ? 1.0 - double(row) / (L.legend_h - 1) : 1.0;
    img.fill_rect(L.legend_x, L.legend_y + row, L.legend_w, 1, viridis(t));
  }
  img.frame_rect(L.legend_x - 1, L.legend_y - 1, L.legend_w + 2, L.legend_h + 2, kFrame);
  for (int i = 0; i < 5; ++i) {
    if (labels[size_t(i)].empty()) continue;
    const int py = L.legend_y + (L.legend_h - 1) * i / 4;
    img.fill_rect(L.legend_x + L.legend_w + 1, py, 4, 1, kFrame);
    draw_text(img, L.legend_x + L.legend_w + 7, py - text_height() / 2, labels[size_t(i)], kInk);
  }
  draw_text(img, L.legend_x - 2, L.legend_y - text_height() - 6, s.unit, kGrey);
  return {std::move(img), L};
}

}  // namespace wse::viz
