// Congestion profile: two flows that share one link saturate that link, and the backpressure
// appears on exactly the two links that feed it, in the report and in the dump, nowhere else.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "host/congestion.hpp"
#include "kernels/gemv/gemv.hpp"
#include "scratch.hpp"
#include "test_support.hpp"
#include "tools/dump_view.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {
namespace {

//          x=0        x=1        x=2
//  y=0              B in (N)
//                      |  b
//  y=1  A in (W) --a--> R ==X==>  --> egress (E)
//
// Flow A (colour 0) enters (0,1) from the west and runs east; flow B (colour 1) enters (1,0)
// from the north, turns east at R = (1,1). Both leave through the east edge of (2,1). X, the
// link R -> (2,1), is the one link they share.
struct Merge {
  static constexpr uint32_t n = 200;
  Wafer wafer{test::spec(2), {3, 2}};
  WaferRun run;
  std::vector<uint8_t> dump;

  explicit Merge(bool flow_a, bool flow_b, unsigned threads = 1) {
    Mesh& m = wafer.mesh();
    if (flow_a) {
      m.set_route({0, 1}, 0, Route::make(Dir::West, {Dir::East}));
      m.set_route({1, 1}, 0, Route::make(Dir::West, {Dir::East}));
      m.set_route({2, 1}, 0, Route::make(Dir::West, {Dir::East}));
      IngressPort& a = m.add_ingress({0, 1}, Dir::West);
      for (uint32_t k = 0; k < n; ++k) a.enqueue(Wavelet{k, 0});
    }
    if (flow_b) {
      m.set_route({1, 0}, 1, Route::make(Dir::North, {Dir::South}));
      m.set_route({1, 1}, 1, Route::make(Dir::North, {Dir::East}));
      m.set_route({2, 1}, 1, Route::make(Dir::West, {Dir::East}));
      IngressPort& b = m.add_ingress({1, 0}, Dir::North);
      for (uint32_t k = 0; k < n; ++k) b.enqueue(Wavelet{k, 1});
    }
    m.add_egress({2, 1}, Dir::East);
    wafer.finalize(threads);
    ActivityRecorder rec(wafer, {"merge", "fwd"}, 50);
    run = wafer.run(100000, rec.hooks());
    dump = rec.dump();
  }

  size_t link(Coord src, Dir dir, LinkKind kind = LinkKind::Hop) const {
    const auto& links = wafer.mesh().links();
    for (size_t i = 0; i < links.size(); ++i)
      if (links[i].src == wafer.shape().id(src) && links[i].dir == dir && links[i].kind == kind) return i;
    ADD_FAILURE() << "no link from " << to_string(src) << " " << dir_name(dir);
    return 0;
  }
};

TEST(ActivityCongestion, TwoFlowsSharingALinkShowUpOnThatLinkAndNowhereElse) {
  Merge both(true, true);
  const size_t x = both.link({1, 1}, Dir::East), a = both.link({0, 1}, Dir::East), b = both.link({1, 0}, Dir::South);
  const auto& links = both.wafer.mesh().links();

  // X carries both flows back to back: one wavelet every cycle for 2n cycles.
  EXPECT_EQ(links[x].counters.wavelets, 2 * Merge::n);
  EXPECT_LE(both.run.cycles, 2 * Merge::n + 12);

  CongestionProfile p = congestion_profile(both.wafer, both.run.cycles, 5);
  // X and the egress link behind it are the busiest; X comes first (index order breaks the tie).
  ASSERT_GE(p.hottest_links.size(), 2u);
  EXPECT_EQ(p.hottest_links[0].index, x);
  EXPECT_GT(p.hottest_links[0].utilization, 0.95);
  // Each feeding link runs at half rate and its wavelets wait for credits about half the time.
  std::set<size_t> backpressured;
  for (const LinkLoad& l : p.most_backpressured) backpressured.insert(l.index);
  EXPECT_EQ(backpressured, (std::set<size_t>{a, b}));
  EXPECT_EQ(p.links_with_backpressure, 2u);
  for (size_t i = 0; i < links.size(); ++i)
    if (i != a && i != b) {
      EXPECT_EQ(links[i].counters.backpressure_cycles, 0u) << i;
    }
  // Each feeding link's n wavelets take the 2n cycles of the merge at half rate: a wavelet waits
  // every other cycle, about n cycles each, less the few before R's lane fills (195 and 194 of
  // 200). It said only "more than n / 4": a count halved or doubled passed.
  EXPECT_NEAR(double(links[a].counters.backpressure_cycles), double(Merge::n), 10.0);
  EXPECT_NEAR(double(links[b].counters.backpressure_cycles), double(Merge::n), 10.0);
  // Both colours were held back.
  ASSERT_EQ(p.colours.size(), 2u);
  EXPECT_GT(p.colours[0].backpressure_cycles, 0u);
  EXPECT_GT(p.colours[1].backpressure_cycles, 0u);
  // Each colour's wavelets are its lanes' over every router on its way (found by a mutation test:
  // the table kept the last router's lane's count; GEMV's hottest colours said 32 for 32,000):
  // each flow crosses three routers, n wavelets through each.
  for (const ColourLoad& c : p.colours) {
    EXPECT_EQ(c.lanes, 3u) << int(c.colour);
    EXPECT_EQ(c.wavelets, 3 * Merge::n) << int(c.colour);
  }
  // The utilization histogram, worked out again from every link's busy cycles: a link in bin
  // min(9, floor(10 x busy / cycles)) (the mutation test's other survivor binned by 9).
  std::vector<uint64_t> bins(10, 0);
  for (const Link& l : links) ++bins[std::min<size_t>(9, size_t(double(l.counters.busy_cycles()) / double(both.run.cycles) * 10))];
  EXPECT_EQ(p.utilization_histogram, bins);
  EXPECT_GT(bins[4] + bins[5] + bins[6], 0u);  // the feeding links at about half rate, where a wrong scale moves them
  nlohmann::json j = to_json(p);
  EXPECT_EQ(j["links_with_backpressure"], 2);
  EXPECT_EQ(j["hottest_links"][0]["link"], "(1,1) E-> (2,1)");

  // The dump says the same, interval by interval.
  std::filesystem::path f = wse::test::scratch_file("merge.wsad");
  {
    std::ofstream out(f, std::ios::binary);
    out.write(reinterpret_cast<const char*>(both.dump.data()), std::streamsize(both.dump.size()));
  }
  DumpView v = load_dump_view(f);
  const MetricGrid* bp = v.link_metric("backpressure_cycles");
  ASSERT_NE(bp, nullptr);
  for (size_t l = 0; l < v.links.size(); ++l) {
    uint64_t total = 0;
    for (const auto& frame : bp->frames) total += frame[l];
    EXPECT_EQ(total, links[l].counters.backpressure_cycles);
    EXPECT_EQ(total > 0, l == a || l == b) << l;
  }
  // No PE is involved.
  for (const auto& m : v.pe_metrics) {
    if (m.name == "idle_cycles") continue;
    for (const auto& frame : m.frames)
      for (uint32_t value : frame) EXPECT_EQ(value, 0u) << m.name;
  }
}

TEST(ActivityCongestion, EachFlowAloneHasNoBackpressure) {
  for (auto [fa, fb] : {std::pair{true, false}, std::pair{false, true}}) {
    Merge one(fa, fb);
    CongestionProfile p = congestion_profile(one.wafer, one.run.cycles, 5);
    EXPECT_EQ(p.backpressure_cycles, 0u);
    EXPECT_EQ(p.links_with_backpressure, 0u);
    EXPECT_TRUE(p.most_backpressured.empty());
    EXPECT_EQ(one.wafer.mesh().links()[one.link({1, 1}, Dir::East)].counters.wavelets, Merge::n);
  }
}

// A PE's link into its router (PE->router) carries every wavelet the PE sends: it showed 0, as
// no one counted what entered it (a router counts the links it sends on; the PE is this one's
// sender), and mean link utilization counted it in its denominator only.
TEST(ActivityCongestion, APesLinkIntoItsRouterCountsWhatThePeSends) {
  Wafer wafer(MachineSpec{}, {8, 6});
  const GemvProblem problem = GemvProblem::random(40, 30, 5);
  GemvKernel kernel(wafer, problem);
  wafer.finalize(2);
  const WaferRun run = wafer.run(1'000'000);
  uint64_t ramp_up = 0, sent = 0, links = 0;
  for (const Link& l : wafer.mesh().links()) {
    if (l.kind != LinkKind::RampUp) continue;
    ++links;
    EXPECT_EQ(l.counters.wavelets, wafer.pe(wafer.shape().coord(l.src)).counters.wavelets_out) << l.src;
    ramp_up += l.counters.wavelets;
  }
  for (uint32_t y = 0; y < 6; ++y)
    for (uint32_t x = 0; x < 8; ++x) sent += wafer.pe({x, y}).counters.wavelets_out;
  EXPECT_GT(links, 0u);
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(ramp_up, sent);
  // The congestion table sees them (hottest links sorted by wavelets: the PE->router ones are there).
  const CongestionProfile p = congestion_profile(wafer, run.cycles, 100000);
  uint64_t listed = 0;
  for (const LinkLoad& h : p.hottest_links)
    if (h.kind == LinkKind::RampUp) listed += h.wavelets;
  EXPECT_EQ(listed, sent);
}

TEST(ActivityCongestion, SramProfileBreaksDownNamedBuffers) {
  Wafer w(test::spec(2), {4, 1});  // (3,0) has no program and takes no part in the mean
  Program p;
  p.name = "idle";
  for (uint32_t x = 0; x < 3; ++x) {
    w.load({x, 0}, &p);
    w.allocate({x, 0}, "weights", 1000 * (x + 1));
    if (x == 2) w.allocate({x, 0}, "acts", 100);
  }
  SramProfile s = sram_profile(w);
  EXPECT_EQ(s.high_water_max, 3000u + 104u);
  // Over the PEs with a program (found by a mutation test: over every tile, a GEMV grid smaller
  // than its mesh showed 2,978 bytes for 4,188).
  EXPECT_DOUBLE_EQ(s.high_water_mean, (1000.0 + 2000.0 + 3104.0) / 3);
  // Printed as it is, to a tenth of a byte (a "%.0f" mean of 4,188.5 read 4188).
  char* text = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&text, &size);
  ASSERT_NE(f, nullptr);
  print(f, s);
  std::fclose(f);
  const std::string printed(text, size);
  std::free(text);
  EXPECT_NE(printed.find("high water 3104 of "), std::string::npos) << printed;
  EXPECT_NE(printed.find(", mean 2034.7 bytes per PE"), std::string::npos) << printed;
  EXPECT_EQ(s.high_water_pe, (Coord{2, 0}));
  ASSERT_EQ(s.buffers.size(), 2u);
  EXPECT_EQ(s.buffers[0].name, "weights");
  EXPECT_EQ(s.buffers[0].pes, 3u);
  EXPECT_EQ(s.buffers[0].total_bytes, 6000u);
  EXPECT_EQ(s.buffers[0].max_bytes, 3000u);
  EXPECT_EQ(s.buffers[1].name, "acts");
  EXPECT_EQ(s.buffers[1].total_bytes, 104u);  // 8-byte aligned
}

}  // namespace
}  // namespace wse
