#include "tools/viz/line_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tools/viz/font.hpp"
#include "tools/viz/heatmap.hpp"

namespace wse::viz {

namespace {

// Round tick spacing (1, 2 or 5 x 10^k) giving about `target` ticks over [lo, hi].
double tick_step(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  if (raw <= 0) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

void line(Image& img, int64_t x0, int64_t y0, int64_t x1, int64_t y1, Rgb c) {
  const int64_t dx = std::llabs(x1 - x0), dy = -std::llabs(y1 - y0);
  const int64_t sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int64_t err = dx + dy;
  for (;;) {
    img.set(x0, y0, c);
    if (x0 == x1 && y0 == y1) break;
    const int64_t e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

}  // namespace

Image render_line_plot(const LinePlot& plot) {
  Image img(plot.width, plot.height);
  const int left = 80, right = 20, top = 44, bottom = 56;
  const int w = int(plot.width) - left - right, h = int(plot.height) - top - bottom;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const PlotSeries& s : plot.series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("line plot '" + plot.title + "': series '" + s.name + "' has x and y of different lengths");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i])) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      if (std::isfinite(s.y[i])) y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
    }
  }
  if (!(x0 <= x1)) x0 = 0, x1 = 1;
  if (!(y0 <= y1)) y0 = 0, y1 = 1;
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) y0 -= 0.5, y1 += 0.5;
  const double ys = tick_step(y0, y1, 5), xs = plot.x_whole ? std::max(1.0, tick_step(x0, x1, 8)) : tick_step(x0, x1, 8);
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  auto px = [&](double x) { return int64_t(std::lround(left + (x - x0) / (x1 - x0) * w)); };
  auto py = [&](double y) { return int64_t(std::lround(top + h - (y - y0) / (y1 - y0) * h)); };

  const Rgb grid{225, 225, 225}, axis{60, 60, 60}, text{30, 30, 30};
  draw_text(img, left, 12, plot.title, text, 2);
  for (double y = y0; y <= y1 + ys / 2; y += ys) {
    line(img, left, py(y), left + w, py(y), grid);
    const std::string label = format_tick(y, ys, std::max(std::abs(y0), std::abs(y1)));
    draw_text(img, left - 6 - text_width(label), int(py(y)) - text_height() / 2, label, text);
  }
  // The x ticks' unit from the ticks themselves (x0 and x1 are the data's ends, not ticks).
  const double x_first = std::ceil(x0 / xs) * xs, x_last = std::floor((x1 + xs / 1e6) / xs) * xs;
  for (double x = x_first; x <= x1 + xs / 1e6; x += xs) {
    line(img, px(x), top, px(x), top + h, grid);
    const std::string label = format_tick(x, xs, std::max(std::abs(x_first), std::abs(x_last)));
    draw_text(img, int(px(x)) - text_width(label) / 2, top + h + 6, label, text);
  }
  img.frame_rect(left, top, w + 1, h + 1, axis);
  draw_text(img, left + w / 2 - text_width(plot.x_label) / 2, top + h + 24, plot.x_label, text);
  draw_text(img, 4, top - 14, plot.y_label, text);

  int legend_y = top + 8;
  for (const PlotSeries& s : plot.series) {
    int64_t lx = -1, ly = -1;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        lx = -1;  // a gap: the line does not join across it
        continue;
      }
      const int64_t qx = px(s.x[i]), qy = py(s.y[i]);
      if (lx >= 0) line(img, lx, ly, qx, qy, s.colour);
      if (s.markers) img.fill_rect(qx - 2, qy - 2, 5, 5, s.colour);
      lx = qx, ly = qy;
    }
    const int tw = text_width(s.name);
    img.fill_rect(left + w - tw - 30, legend_y + 2, 16, 3, s.colour);
    draw_text(img, left + w - tw - 8, legend_y - 1, s.name, text);
    legend_y += text_height() + 6;
  }
  return img;
}

void write_line_plot(const std::filesystem::path& path, const LinePlot& plot) { render_line_plot(plot).write_png(path); }

}  // namespace wse::viz
