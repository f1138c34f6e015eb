#pragma once
// Where the fabric is congested and how full SRAM is, from a wafer's counters after a run: the
// "congestion" and "sram" sections of report.json and the summary `wse trace` prints.
//
// Backpressure is counted where a wavelet waits for a credit: on the link it wants to enter. So
// when two flows share a link, that link runs at full utilization and the backpressure shows on
// the links feeding its router (the merging flows' last hops), which is where wavelets wait.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "wafer/wafer.hpp"

namespace wse {

struct LinkLoad {
  size_t index = 0;  // in Mesh::links()
  Coord src;
  Dir dir = Dir::East;
  LinkKind kind = LinkKind::Hop;
  uint64_t wavelets = 0, busy_cycles = 0, backpressure_cycles = 0;
  double utilization = 0;  // busy cycles / run cycles
};

struct ColourLoad {
  Colour colour = 0;
  uint32_t lanes = 0;  // routers with a route for this colour
  uint64_t wavelets = 0, backpressure_cycles = 0;  // summed over those routers' lanes
};

struct CongestionProfile {
  Cycle cycles = 0;
  uint64_t links = 0, links_with_backpressure = 0, backpressure_cycles = 0;
  uint64_t pe_stall_send_cycles = 0;
  double mean_utilization = 0;
  std::vector<uint64_t> utilization_histogram;  // links per 10% bin of utilization
  std::vector<LinkLoad> hottest_links;          // by utilization, then backpressure
  std::vector<LinkLoad> most_backpressured;     // by backpressure (links with some only)
  std::vector<ColourLoad> colours;              // by backpressure, then wavelets (colours in use)
};

struct SramBufferUse {
  std::string name;
  uint64_t pes = 0, total_bytes = 0;
  uint32_t max_bytes = 0;
};

struct SramProfile {
  uint32_t capacity = 0;
  uint32_t high_water_max = 0;
  Coord high_water_pe;
  double high_water_mean = 0;  // over PEs with a program
  std::vector<SramBufferUse> buffers;  // by total bytes
};

CongestionProfile congestion_profile(const Wafer& wafer, Cycle cycles, size_t top_n = 10);
SramProfile sram_profile(Wafer& wafer);

nlohmann::json to_json(const CongestionProfile& p);
nlohmann::json to_json(const SramProfile& p);
std::string link_name(const LinkLoad& l);
void print(std::FILE* out, const CongestionProfile& p, size_t top_n);
void print(std::FILE* out, const SramProfile& p);

}  // namespace wse
