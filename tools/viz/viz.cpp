#include "tools/viz/viz.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "core/errors.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "tools/viz/heatmap.hpp"
#include "tools/viz/html_viewer.hpp"

namespace wse::viz {
namespace fs = std::filesystem;

namespace {

// File names come from metric names: keep them to [A-Za-z0-9_-].
std::string file_stem(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) c = '_';
  return s.empty() ? "metric" : s;
}

void write_png(const Heatmap& h, const fs::path& p, VizResult& r, bool sync = true) {
  h.image.write_png(p, sync);
  r.files.push_back(p);
}

fs::path make_dir(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) throw_output_error("viz output", p, "create it", ec.value());
  return p;
}

}  // namespace

std::string picture_subtitle(const DumpView& d, uint64_t start, uint64_t end) {
  std::string s = "mesh " + std::to_string(d.width) + "x" + std::to_string(d.height);
  if (!d.machine.empty()) s += "  " + d.machine;
  if (!d.layer.empty()) s += "  layer " + d.layer;
  if (!d.pass.empty()) s += " " + d.pass;
  return s + "  cycles " + std::to_string(start) + "-" + std::to_string(end);
}

bool is_level(const MetricGrid& m) {
  return m.unit == "bytes" || m.name.find("occupancy") != std::string::npos ||
         m.name.find("queue") != std::string::npos || m.name.find("high_water") != std::string::npos;
}

std::vector<uint32_t> run_summary(const DumpView& d, const MetricGrid& m, size_t first, size_t end) {
  const size_t cells = size_t(d.width) * d.height;
  std::vector<uint32_t> out(cells, 0);
  const bool level = is_level(m);
  if (m.from_links >= 0 && size_t(m.from_links) < d.link_metrics.size()) {
    const MetricGrid& lm = d.link_metrics[size_t(m.from_links)];
    std::vector<uint64_t> link(d.links.size(), 0);
    for (size_t k = first; k < std::min(end, lm.frames.size()); ++k)
      for (size_t i = 0, n = std::min(link.size(), lm.frames[k].size()); i < n; ++i)
        link[i] = level ? std::max<uint64_t>(link[i], lm.frames[k][i]) : link[i] + lm.frames[k][i];
    for (size_t i = 0; i < link.size(); ++i) {
      const size_t t = size_t(d.links[i].y) * d.width + d.links[i].x;
      if (t < cells) out[t] = std::max(out[t], uint32_t(std::min<uint64_t>(link[i], UINT32_MAX)));
    }
    return out;
  }
  for (size_t k = first; k < std::min(end, m.frames.size()); ++k)
    for (size_t i = 0, n = m.frames[k].size(); i < cells && i < n; ++i) {
      const uint32_t v = m.frames[k][i];
      if (level) out[i] = std::max(out[i], v);
      else out[i] = uint32_t(std::min<uint64_t>(uint64_t(out[i]) + v, UINT32_MAX));
    }
  return out;
}

void check_dump_view(const DumpView& d) {
  if (d.width == 0 || d.height == 0) throw UsageError("dump has an empty mesh");
  if (d.pe_metrics.empty() && d.link_metrics.empty()) throw UsageError("dump has no metrics");
  if (d.interval_starts.empty()) throw UsageError("dump has no intervals");
  const size_t cells = size_t(d.width) * d.height;
  const size_t intervals = d.interval_starts.size();
  for (const auto& m : d.pe_metrics) {
    if (m.frames.size() != intervals)
      throw UsageError("dump metric " + m.name + " has " + std::to_string(m.frames.size()) + " intervals, expected " +
                       std::to_string(intervals));
    for (const auto& f : m.frames)
      if (f.size() != cells)
        throw UsageError("dump metric " + m.name + " has a frame of " + std::to_string(f.size()) + " values for " +
                         std::to_string(cells) + " PEs");
  }
  for (const auto& l : d.links)
    if (l.x >= d.width || l.y >= d.height || l.dir > 4)
      throw UsageError("dump has a link outside the mesh at (" + std::to_string(l.x) + "," + std::to_string(l.y) + ")");
  for (const auto& m : d.link_metrics) {
    if (m.frames.size() != intervals) throw UsageError("dump link metric " + m.name + " has the wrong interval count");
    for (const auto& f : m.frames)
      if (f.size() != d.links.size()) throw UsageError("dump link metric " + m.name + " does not match the link list");
  }
}

std::vector<MetricGrid> tile_metrics(const DumpView& d) {
  std::vector<MetricGrid> out = d.pe_metrics;
  const size_t cells = size_t(d.width) * d.height;
  for (size_t k = 0; k < d.link_metrics.size(); ++k) {
    const MetricGrid& lm = d.link_metrics[k];
    MetricGrid g;
    g.name = lm.name.rfind("link", 0) == 0 ? lm.name : "link_" + lm.name;
    g.unit = lm.unit;
    g.from_links = int32_t(k);
    for (const auto& f : lm.frames) {
      std::vector<uint32_t> grid(cells, 0);
      for (size_t i = 0; i < d.links.size() && i < f.size(); ++i) {
        uint32_t& v = grid[size_t(d.links[i].y) * d.width + d.links[i].x];
        v = std::max(v, f[i]);
      }
      g.frames.push_back(std::move(grid));
    }
    out.push_back(std::move(g));
  }
  return out;
}

VizResult write_viz(const DumpView& d, const fs::path& out_dir, const VizOptions& opt) {
  check_dump_view(d);
  const std::vector<MetricGrid> all = tile_metrics(d);
  std::vector<const MetricGrid*> chosen;
  for (const auto& m : all)
    if (opt.metric.empty() || m.name == opt.metric) chosen.push_back(&m);
  if (chosen.empty()) {
    std::string names;
    for (const auto& m : all) names += (names.empty() ? "" : ", ") + m.name;
    throw UsageError("no metric named '" + opt.metric + "' in the dump (it has: " + names + ")");
  }

  VizResult r;
  // Through the command's OutputDir when there is one: it records every top-level entry.
  auto top = [&](const std::string& name) { return opt.out ? opt.out->entry(name) : out_dir / name; };
  if (!opt.out) make_dir(out_dir);
  fs::path frames_dir;
  if (opt.frames) frames_dir = opt.out ? opt.out->subdir("frames") : make_dir(out_dir / "frames");
  const size_t n = d.interval_starts.size();
  const size_t cap = std::max<uint32_t>(opt.max_frames, 1);
  // Frames: consecutive intervals merged, `per` a frame, so that there are at most max_frames.
  const size_t per = (n + cap - 1) / cap, count = (n + per - 1) / per;
  const size_t pictures = chosen.size() * (1 + (opt.frames ? count : 0));
  size_t drawn = 0;
  auto drew = [&] {
    if (opt.progress) opt.progress(++drawn, pictures);
  };
  std::set<std::string> stems;
  for (const MetricGrid* m : chosen) {
    r.metrics.push_back(m->name);
    // Two names may keep to one stem ("a.b", "a_b"): the second's pictures get a number, never
    // drawn over the first's.
    std::string stem = file_stem(m->name);
    for (int k = 2; !stems.insert(stem).second; ++k) stem = file_stem(m->name) + "_" + std::to_string(k);
    const std::vector<uint32_t> total = run_summary(d, *m);
    HeatmapSpec s;
    s.width = d.width;
    s.height = d.height;
    s.unit = m->unit;
    // The whole run's cycles, as a frame gives its own: what its counts are totals over.
    const uint64_t run_start = d.interval_starts.empty() ? 0 : d.interval_starts.front();
    s.subtitle = picture_subtitle(d, run_start, std::max<uint64_t>(d.cycles, run_start));
    s.values = total;
    s.title = m->name + (is_level(*m) ? "  max over " : "  total over ") + std::to_string(n) +
              (n == 1 ? " interval" : " intervals");
    s.scale = {0, double(*std::max_element(total.begin(), total.end()))};  // 0: a one-colour legend, "all 0"
    write_png(render_heatmap(s), top(stem + ".png"), r);
    drew();
    if (!opt.frames) continue;
    r.frames = count, r.intervals_per_frame = per;
    std::vector<std::vector<uint32_t>> merged;
    if (per > 1) {
      merged.reserve(count);
      for (size_t j = 0; j < count; ++j) merged.push_back(run_summary(d, *m, j * per, (j + 1) * per));
    }
    auto frame = [&](size_t j) -> const std::vector<uint32_t>& { return per > 1 ? merged[j] : m->frames[j]; };
    // Frames share one scale: the largest value of any frame.
    uint32_t hi = 0;
    for (size_t j = 0; j < count; ++j) hi = std::max(hi, *std::max_element(frame(j).begin(), frame(j).end()));
    s.scale = {0, double(hi)};
    for (size_t j = 0; j < count; ++j) {
      const size_t first = j * per, last = std::min(n, (j + 1) * per) - 1;
      const uint64_t start = d.interval_starts[first];
      const uint64_t end = last + 1 < n ? d.interval_starts[last + 1] : std::max<uint64_t>(d.cycles, start);
      s.values = frame(j);
      s.title = m->name + (per > 1 ? "  intervals " + std::to_string(first + 1) + "-" + std::to_string(last + 1) + "/" + std::to_string(n) +
                                         (is_level(*m) ? " (max)" : " (sum)")
                                   : "  interval " + std::to_string(j + 1) + "/" + std::to_string(n));
      s.subtitle = picture_subtitle(d, start, end);
      char num[32];
      std::snprintf(num, sizeof num, "_%04zu.png", j);
      write_png(render_heatmap(s), opt.out ? opt.out->entry_in("frames", stem + num) : frames_dir / (stem + num), r, false);  // frames are cheap to redraw: no fsync
      drew();
    }
  }
  if (opt.html) {
    HtmlOptions h{opt.max_html_values, opt.max_html_side};
    const std::string page = render_html_viewer(d, all, h, &r.html_block, opt.timelines);
    const fs::path p = top("index.html");
    write_file_atomic(p, page, "viewer");
    r.files.push_back(p);
  }
  return r;
}

}  // namespace wse::viz
