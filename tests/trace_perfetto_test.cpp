// The Perfetto trace: valid trace-event JSON with a task track per traced PE, the stream phases
// and the counter tracks, all consistent with the wafer's own counters.
#include <gtest/gtest.h>

#include <algorithm>
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

  std::map<std::string, int> pe_tid;           // "PE (x,y)" -> tid of its main thread
  std::map<int, std::string> track_of;         // tid -> track name
  std::map<int, std::vector<nlohmann::json>> slices;  // tid -> task slices
  std::map<int, std::vector<nlohmann::json>> ops;     // tid -> DSD op slices
  std::map<std::string, std::vector<nlohmann::json>> counters;
  std::map<std::string, nlohmann::json> phases;
  std::set<std::string> processes;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"], name = e["name"];
    if (ph == "M" && name == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (ph == "M" && name == "thread_name" && e["pid"] == 1) pe_tid[e["args"]["name"]] = e["tid"], track_of[e["tid"]] = e["args"]["name"];
    if (ph == "X" && e["cat"] == "task") slices[e["tid"]].push_back(e);
    if (ph == "X" && e["cat"] == "dsd") ops[e["tid"]].push_back(e);
    if (ph == "X" && e["cat"] == "stream") phases[name] = e;
    if (ph == "C") counters[name].push_back(e);
  }
  EXPECT_EQ(processes.size(), 3u);

  // A main-thread track per traced PE (the top-left 2x2), with one slice per task the PE ran and
  // its streaming ops, and a track per microthread that ran an op (receiving x). Slices on one
  // track never overlap; their fmac cycles add up to the PE's.
  for (uint32_t y = 0; y < 2; ++y) {
    for (uint32_t x = 0; x < 2; ++x) {
      const std::string track = "PE " + to_string({x, y});
      ASSERT_TRUE(pe_tid.count(track)) << track;
      const int main_tid = pe_tid[track];
      const auto& s = slices[main_tid];
      EXPECT_EQ(s.size(), g.wafer.pe({x, y}).counters.tasks) << track;
      uint64_t fmac = 0;
      for (const auto& [tid, name] : track_of) {
        if (name.rfind(track, 0) != 0) continue;
        std::vector<nlohmann::json> all = slices[tid];
        all.insert(all.end(), ops[tid].begin(), ops[tid].end());
        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a["ts"] < b["ts"]; });
        uint64_t prev_end = 0;
        for (const auto& e : all) {
          EXPECT_GE(e["ts"].get<uint64_t>(), prev_end) << "slices overlap on " << name;
          EXPECT_GE(e["dur"].get<uint64_t>(), 1u);
          prev_end = e["ts"].get<uint64_t>() + e["dur"].get<uint64_t>();
          fmac += e["args"]["fmac"].get<uint64_t>();
          EXPECT_LE(prev_end, g.run.cycles);
        }
      }
      EXPECT_EQ(fmac, g.wafer.pe({x, y}).counters.fmac_cycles) << track;
      // The start task receives x on a microthread; the compute task then runs y = A x.
      ASSERT_EQ(s.size(), 2u) << track;
      EXPECT_EQ(s[0]["name"], "local task 0");
      EXPECT_EQ(s[1]["name"], "local task 1");
      EXPECT_EQ(s[1]["args"]["fmac"].get<uint64_t>(), g.wafer.pe({x, y}).counters.fmac_cycles) << track;
      ASSERT_TRUE(pe_tid.count(track + " ut0")) << track;
      ASSERT_EQ(ops[pe_tid[track + " ut0"]].size(), 1u);
      EXPECT_EQ(ops[pe_tid[track + " ut0"]][0]["name"], "@fmovs");
      // The streaming partial-sum op on the main thread, after the compute task.
      ASSERT_EQ(ops[main_tid].size(), 1u) << track;
      EXPECT_EQ(ops[main_tid][0]["name"], x == 0 ? "@fmovs" : "@fadds");
      EXPECT_GE(ops[main_tid][0]["ts"].get<uint64_t>(), s[1]["ts"].get<uint64_t>() + s[1]["dur"].get<uint64_t>());
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
