#include "host/congestion.hpp"

#include <algorithm>
#include <map>

namespace wse {

namespace {

const char* kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::Hop: return "hop";
    case LinkKind::RampDown: return "ramp-down";
    case LinkKind::RampUp: return "ramp-up";
    default: return "egress";
  }
}

}  // namespace

std::string link_name(const LinkLoad& l) {
  switch (l.kind) {
    case LinkKind::RampDown: return to_string(l.src) + " router->PE";
    case LinkKind::RampUp: return to_string(l.src) + " PE->router";
    case LinkKind::Egress: return to_string(l.src) + " " + dir_name(l.dir) + " egress";
    default: {
      Coord c = l.src;
      switch (l.dir) {
        case Dir::North: --c.y; break;
        case Dir::South: ++c.y; break;
        case Dir::East: ++c.x; break;
        default: --c.x; break;
      }
      return to_string(l.src) + " " + dir_name(l.dir) + "-> " + to_string(c);
    }
  }
}

CongestionProfile congestion_profile(const Wafer& wafer, Cycle cycles, size_t top_n) {
  CongestionProfile p;
  p.cycles = cycles;
  p.utilization_histogram.assign(10, 0);
  std::vector<LinkLoad> all;
  const auto& links = wafer.mesh().links();
  all.reserve(links.size());
  double sum = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    const Link& l = links[i];
    const uint64_t busy = wafer.busy_cycles(l);
    LinkLoad x{i, wafer.shape().coord(l.src), l.dir, l.kind, l.counters.wavelets, busy, l.counters.backpressure_cycles,
               cycles ? double(busy) / double(cycles) : 0.0};
    sum += x.utilization;
    p.backpressure_cycles += x.backpressure_cycles;
    p.links_with_backpressure += x.backpressure_cycles > 0;
    ++p.utilization_histogram[std::min<size_t>(9, size_t(x.utilization * 10))];
    all.push_back(x);
  }
  p.links = all.size();
  p.mean_utilization = all.empty() ? 0 : sum / double(all.size());
  for (const Pe& pe : wafer.pes()) p.pe_stall_send_cycles += pe.counters.stall_send_cycles;

  auto top = [&](auto better, bool only_backpressure) {
    std::vector<LinkLoad> v;
    for (const LinkLoad& l : all)
      if (!only_backpressure || l.backpressure_cycles) v.push_back(l);
    const size_t n = std::min(top_n, v.size());
    std::partial_sort(v.begin(), v.begin() + long(n), v.end(), [&](const LinkLoad& a, const LinkLoad& b) {
      if (better(a, b)) return true;
      if (better(b, a)) return false;
      return a.index < b.index;
    });
    v.resize(n);
    return v;
  };
  p.hottest_links = top(
      [](const LinkLoad& a, const LinkLoad& b) {
        return a.busy_cycles != b.busy_cycles ? a.busy_cycles > b.busy_cycles : a.backpressure_cycles > b.backpressure_cycles;
      },
      false);
  p.most_backpressured = top(
      [](const LinkLoad& a, const LinkLoad& b) {
        return a.backpressure_cycles != b.backpressure_cycles ? a.backpressure_cycles > b.backpressure_cycles
                                                               : a.wavelets > b.wavelets;
      },
      true);

  std::vector<ColourLoad> colours(MachineSpec::kMaxColours);
  for (Colour c = 0; c < colours.size(); ++c) colours[c].colour = c;
  const auto& pes = wafer.pes();
  for (TileId t = 0; t < pes.size(); ++t)
    if (const Router* r = wafer.mesh().router(t))
      for (const Lane& lane : r->lanes) {
        ColourLoad& c = colours[lane.colour];
        ++c.lanes;
        c.wavelets += lane.counters.wavelets;
        c.backpressure_cycles += lane.counters.backpressure_cycles;
      }
  std::erase_if(colours, [](const ColourLoad& c) { return c.lanes == 0; });
  std::stable_sort(colours.begin(), colours.end(), [](const ColourLoad& a, const ColourLoad& b) {
    return a.backpressure_cycles != b.backpressure_cycles ? a.backpressure_cycles > b.backpressure_cycles
                                                           : a.wavelets > b.wavelets;
  });
  if (colours.size() > top_n) colours.resize(top_n);
  p.colours = std::move(colours);
  return p;
}

SramProfile sram_profile(Wafer& wafer) {
  SramProfile p;
  p.capacity = wafer.spec().sram_bytes_per_pe;
  uint64_t sum = 0, programs = 0;
  std::map<uint16_t, SramBufferUse> by_name;
  for (const Pe& pe : wafer.pes()) {
    if (pe.sram.high_water() > p.high_water_max) p.high_water_max = pe.sram.high_water(), p.high_water_pe = pe.coord;
    if (pe.program) sum += pe.sram.high_water(), ++programs;
    for (const SramAllocation& a : pe.sram.allocations()) {
      SramBufferUse& u = by_name[a.name];
      ++u.pes;
      u.total_bytes += a.bytes;
      u.max_bytes = std::max(u.max_bytes, a.bytes);
    }
  }
  p.high_water_mean = programs ? double(sum) / double(programs) : 0.0;
  for (auto& [id, u] : by_name) {
    u.name = wafer.names().name(id);
    p.buffers.push_back(u);
  }
  std::stable_sort(p.buffers.begin(), p.buffers.end(),
                   [](const SramBufferUse& a, const SramBufferUse& b) { return a.total_bytes > b.total_bytes; });
  return p;
}

nlohmann::json to_json(const CongestionProfile& p) {
  auto link = [](const LinkLoad& l) {
    return nlohmann::json{{"link", link_name(l)}, {"x", l.src.x}, {"y", l.src.y}, {"dir", dir_name(l.dir)},
                          {"kind", kind_name(l.kind)}, {"wavelets", l.wavelets}, {"busy_cycles", l.busy_cycles},
                          {"utilization", l.utilization}, {"backpressure_cycles", l.backpressure_cycles}};
  };
  nlohmann::json j;
  j["links"] = p.links;
  j["links_with_backpressure"] = p.links_with_backpressure;
  j["link_backpressure_cycles"] = p.backpressure_cycles;
  j["pe_stall_send_cycles"] = p.pe_stall_send_cycles;
  j["mean_link_utilization"] = p.mean_utilization;
  j["utilization_histogram"] = p.utilization_histogram;
  j["hottest_links"] = nlohmann::json::array();
  for (const auto& l : p.hottest_links) j["hottest_links"].push_back(link(l));
  j["most_backpressured_links"] = nlohmann::json::array();
  for (const auto& l : p.most_backpressured) j["most_backpressured_links"].push_back(link(l));
  j["colours"] = nlohmann::json::array();
  for (const auto& c : p.colours)
    j["colours"].push_back({{"colour", c.colour}, {"routers", c.lanes}, {"wavelets", c.wavelets},
                            {"backpressure_cycles", c.backpressure_cycles}});
  return j;
}

nlohmann::json to_json(const SramProfile& p) {
  nlohmann::json j;
  j["capacity_bytes"] = p.capacity;
  j["high_water_max_bytes"] = p.high_water_max;
  j["high_water_pe"] = {{"x", p.high_water_pe.x}, {"y", p.high_water_pe.y}};
  j["high_water_mean_bytes"] = p.high_water_mean;
  j["buffers"] = nlohmann::json::array();
  for (const auto& b : p.buffers)
    j["buffers"].push_back({{"name", b.name}, {"pes", b.pes}, {"total_bytes", b.total_bytes}, {"max_bytes", b.max_bytes}});
  return j;
}

void print(std::FILE* out, const CongestionProfile& p, size_t top_n) {
  std::fprintf(out, "  links             %llu, mean utilization %.1f%%, %llu with backpressure (%llu cycles)\n",
               (unsigned long long)p.links, 100 * p.mean_utilization, (unsigned long long)p.links_with_backpressure,
               (unsigned long long)p.backpressure_cycles);
  std::fprintf(out, "  hottest links     %-34s %10s %7s %12s\n", "link", "wavelets", "util", "backpressure");
  for (size_t i = 0; i < std::min(top_n, p.hottest_links.size()); ++i) {
    const LinkLoad& l = p.hottest_links[i];
    std::fprintf(out, "                    %-34s %10llu %6.1f%% %12llu\n", link_name(l).c_str(),
                 (unsigned long long)l.wavelets, 100 * l.utilization, (unsigned long long)l.backpressure_cycles);
  }
  if (!p.most_backpressured.empty()) {
    std::fprintf(out, "  most backpressure %-34s %10s %7s %12s\n", "link", "wavelets", "util", "backpressure");
    for (size_t i = 0; i < std::min(top_n, p.most_backpressured.size()); ++i) {
      const LinkLoad& l = p.most_backpressured[i];
      std::fprintf(out, "                    %-34s %10llu %6.1f%% %12llu\n", link_name(l).c_str(),
                   (unsigned long long)l.wavelets, 100 * l.utilization, (unsigned long long)l.backpressure_cycles);
    }
  }
  std::fprintf(out, "  hottest colours   %-8s %8s %12s %12s\n", "colour", "routers", "wavelets", "backpressure");
  for (size_t i = 0; i < std::min(top_n, p.colours.size()); ++i) {
    const ColourLoad& c = p.colours[i];
    std::fprintf(out, "                    %-8u %8u %12llu %12llu\n", unsigned(c.colour), c.lanes,
                 (unsigned long long)c.wavelets, (unsigned long long)c.backpressure_cycles);
  }
}

void print(std::FILE* out, const SramProfile& p) {
  std::fprintf(out, "  SRAM              high water %u of %u bytes at PE %s, mean %.1f bytes per PE\n", p.high_water_max,
               p.capacity, to_string(p.high_water_pe).c_str(), p.high_water_mean);
  for (const auto& b : p.buffers)
    std::fprintf(out, "    %-16s %8llu PEs, %12llu bytes, at most %u per PE\n", b.name.c_str(), (unsigned long long)b.pes,
                 (unsigned long long)b.total_bytes, b.max_bytes);
}

}  // namespace wse
