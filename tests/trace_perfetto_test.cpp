// The Perfetto trace: valid trace-event JSON with a task track per traced PE, the stream phases
// and the counter tracks, all consistent with the wafer's own counters.
#include <gtest/gtest.h>

#include <map>

#include "activity_test_support.hpp"
#include "tools/perfetto_export.hpp"

namespace wse {
namespace {

TEST(TracePerfetto, JsonParsesAndHoldsTheExpectedTracksAndCounters) {
  test::RecordedGemv g({8, 6}, 90, 80, 40, 1, "perfetto.wsad");
  const std::string text = perfetto_trace(g.view, g.traced, g.phases).dump();
  const nlohmann::json j = nlohmann::json::parse(text);  // what a viewer reads
  ASSERT_TRUE(j.contains("traceEvents"));
  ASSERT_TRUE(j["traceEvents"].is_array());

  std::map<std::string, int> pe_tid;           // "PE (x,y)" -> tid
  std::map<int, std::vector<nlohmann::json>> slices;  // tid -> task slices
  std::map<std::string, std::vector<nlohmann::json>> counters;
  std::map<std::string, nlohmann::json> phases;
  std::set<std::string> processes;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"], name = e["name"];
    if (ph == "M" && name == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (ph == "M" && name == "thread_name" && e["pid"] == 1) pe_tid[e["args"]["name"]] = e["tid"];
    if (ph == "X" && e["cat"] == "task") slices[e["tid"]].push_back(e);
    if (ph == "X" && e["cat"] == "stream") phases[name] = e;
    if (ph == "C") counters[name].push_back(e);
  }
  EXPECT_EQ(processes.size(), 3u);

  // A track per traced PE (the top-left 2x2), each with one slice per task the PE ran.
  ASSERT_EQ(pe_tid.size(), 4u);
  for (uint32_t y = 0; y < 2; ++y) {
    for (uint32_t x = 0; x < 2; ++x) {
      const std::string track = "PE " + to_string({x, y});
      ASSERT_TRUE(pe_tid.count(track)) << track;
      const auto& s = slices[pe_tid[track]];
      EXPECT_EQ(s.size(), g.wafer.pe({x, y}).counters.tasks) << track;
      uint64_t fmac = 0, prev_end = 0;
      for (const auto& e : s) {
        EXPECT_GE(e["ts"].get<uint64_t>(), prev_end) << "slices overlap on " << track;
        EXPECT_GE(e["dur"].get<uint64_t>(), 1u);
        prev_end = e["ts"].get<uint64_t>() + e["dur"].get<uint64_t>();
        fmac += e["args"]["fmac"].get<uint64_t>();
        EXPECT_LE(prev_end, g.run.cycles);
      }
      EXPECT_EQ(fmac, g.wafer.pe({x, y}).counters.fmac_cycles) << track;
      // Data tasks on colour 0 (x) every PE; partial sums (colour 1 or 2) from the west.
      EXPECT_EQ(s.front()["name"], "data task c0");
    }
  }

  // Stream phases: MemoryX's ingress stream, then the results leaving to the host.
  ASSERT_TRUE(phases.count("ingress stream"));
  ASSERT_TRUE(phases.count("egress stream"));
  EXPECT_EQ(phases["ingress stream"]["args"]["wavelets"], 80);
  EXPECT_EQ(phases["egress stream"]["args"]["wavelets"], 90);
  uint64_t last_arrival = 0, first_arrival = ~0ull;
  for (const EgressPort& p : g.wafer.mesh().egress_ports())
    for (const EgressArrival& a : p.received()) last_arrival = std::max(last_arrival, a.cycle), first_arrival = std::min(first_arrival, a.cycle);
  EXPECT_EQ(phases["egress stream"]["ts"], first_arrival);
  EXPECT_EQ(phases["egress stream"]["ts"].get<uint64_t>() + phases["egress stream"]["dur"].get<uint64_t>(), last_arrival + 1);
  EXPECT_LT(phases["ingress stream"]["ts"].get<uint64_t>(), phases["egress stream"]["ts"].get<uint64_t>());

  // Counter tracks, one point per interval.
  const size_t n = g.view.interval_starts.size();
  for (const char* name : {"SRAM bytes in use (wafer)", "link utilization", "link backpressure cycles",
                           "wavelet hops per cycle", "ingress_wavelets per cycle", "egress_wavelets per cycle",
                           "SRAM bytes (0,0)", "SRAM bytes (1,1)"}) {
    ASSERT_TRUE(counters.count(name)) << name;
    EXPECT_EQ(counters[name].size(), n) << name;
  }
  uint64_t sram = 0;
  for (const Pe& pe : g.wafer.pes()) sram += pe.sram.bytes_in_use();
  EXPECT_EQ(counters["SRAM bytes in use (wafer)"].back()["args"]["bytes"], sram);
  for (const auto& c : counters["link utilization"]) {
    EXPECT_LE(c["args"]["max"].get<double>(), 1.0);
    EXPECT_LE(c["args"]["mean"].get<double>(), c["args"]["max"].get<double>());
  }
  uint64_t bp = 0, link_bp = 0;
  for (const auto& c : counters["link backpressure cycles"]) bp += c["args"]["cycles"].get<uint64_t>();
  for (const Link& l : g.wafer.mesh().links()) link_bp += l.counters.backpressure_cycles;
  EXPECT_EQ(bp, link_bp);
}

}  // namespace
}  // namespace wse
