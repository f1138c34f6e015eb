// The HTML viewer page: self-contained (no network), with the dump's numbers embedded as JSON.
// The page's behaviour in a real browser is tested by tests/viewer/viewer_test.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tools/viz/html_viewer.hpp"
#include "tools/viz/viz.hpp"
#include "viz_demo_dump.hpp"

namespace {

using namespace wse;
using namespace wse::viz;
using nlohmann::json;

json embedded(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"wse-data\">";
  const size_t a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = page.find("</script>", a);
  return json::parse(page.substr(a + open.size(), b - a - open.size()));
}

TEST(VizHtml, EmbedsEveryMetricAndIntervalAsJson) {
  const DumpView d = wse::testing::demo_dump(48, 32, 8);
  const auto metrics = tile_metrics(d);
  uint32_t block = 0;
  const std::string page = render_html_viewer(d, metrics, {}, &block);
  EXPECT_EQ(block, 1u);
  const json j = embedded(page);
  EXPECT_EQ(j["mesh"]["width"], 48);
  EXPECT_EQ(j["mesh"]["height"], 32);
  EXPECT_EQ(j["block"], 1);
  EXPECT_EQ(j["layer"], "demo");
  ASSERT_EQ(j["intervals"].size(), 8u);
  EXPECT_EQ(j["intervals"][7][0], 7000);
  EXPECT_EQ(j["intervals"][7][1], d.cycles);
  ASSERT_EQ(j["metrics"].size(), metrics.size());
  for (size_t m = 0; m < metrics.size(); ++m) {
    EXPECT_EQ(j["metrics"][m]["name"], metrics[m].name);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(j["metrics"][m]["frames"][i].get<std::vector<uint32_t>>(), metrics[m].frames[i]);
  }
  EXPECT_EQ(j["viridis"].size(), 11u);
  // The per-tile link grid: the east link of a tile in the middle row carries 800.
  EXPECT_EQ(j["metrics"][4]["name"], "link_wavelets");
  EXPECT_EQ(j["metrics"][4]["frames"][0][16 * 48 + 3], 800);
  EXPECT_EQ(j["metrics"][4]["frames"][2][2 * 48 + 3], 3 + 2);
}

// A tile with two links whose busiest link changes between intervals: link A carries 4 then 6
// wavelets, link B 6 then 2. Each interval's tile value is its busier link (6, 6), but over the
// run no link carried 12: A carried 10, B 8, so the run's tile value is 10 (a two-PE cell with
// PE counts 3 + 5 and 7 + 0 likewise shows 8 over the run, not 7 + 5). Worked by hand.
TEST(VizHtml, ARunTotalIsTheLargestLinksOrPesOwnTotal) {
  DumpView d;
  d.width = 2, d.height = 1, d.cycles = 200, d.interval_cycles = 100;
  d.interval_starts = {0, 100};
  d.links = {{0, 0, 1, 0}, {0, 0, 2, 0}};  // (0,0) east and south
  MetricGrid w;
  w.name = "wavelets", w.unit = "wavelets";
  w.frames = {{4, 6}, {6, 2}};
  d.link_metrics.push_back(w);
  MetricGrid c;
  c.name = "fmac_cycles", c.unit = "cycles";
  c.frames = {{3, 7}, {5, 0}};
  d.pe_metrics.push_back(c);
  const auto metrics = tile_metrics(d);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[1].frames, (std::vector<std::vector<uint32_t>>{{6, 0}, {6, 0}}));  // per interval: the busier link
  EXPECT_EQ(run_summary(d, metrics[1]), (std::vector<uint32_t>{10, 0}));
  EXPECT_EQ(run_summary(d, metrics[0]), (std::vector<uint32_t>{8, 7}));
  // The page embeds the same: per PE at one PE a cell, and at two (a 2 x 1 block) the larger PE's.
  json j = embedded(render_html_viewer(d, metrics, {}));
  EXPECT_EQ(j["metrics"][1]["run"].get<std::vector<uint32_t>>(), (std::vector<uint32_t>{10, 0}));
  EXPECT_EQ(j["metrics"][0]["run"].get<std::vector<uint32_t>>(), (std::vector<uint32_t>{8, 7}));
  uint32_t block = 0;
  j = embedded(render_html_viewer(d, metrics, {.max_values = 4'000'000, .max_side = 1}, &block));
  ASSERT_EQ(block, 2u);
  EXPECT_EQ(j["metrics"][0]["run"].get<std::vector<uint32_t>>(), (std::vector<uint32_t>{8}));  // not 7 + 5
  EXPECT_EQ(j["metrics"][1]["run"].get<std::vector<uint32_t>>(), (std::vector<uint32_t>{10}));
}

TEST(VizHtml, NeedsNoNetwork) {
  const DumpView d = wse::testing::demo_dump(8, 8, 2);
  const std::string page = render_html_viewer(d, tile_metrics(d), {});
  for (const char* s : {"http://", "https://", "<link", "src=", "@import", "url("}) EXPECT_EQ(page.find(s), std::string::npos) << s;
  EXPECT_NE(page.find("<canvas id=\"mesh\""), std::string::npos);
  EXPECT_NE(page.find("id=\"pe-panel\""), std::string::npos);
  EXPECT_NE(page.find("id=\"slider\""), std::string::npos);
  EXPECT_NE(page.find("id=\"metric\""), std::string::npos);
}

TEST(VizHtml, ScriptEndInANameCannotBreakThePage) {
  DumpView d = wse::testing::demo_dump(4, 4, 1);
  d.layer = "</script><b>x";
  const std::string page = render_html_viewer(d, tile_metrics(d), {});
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_EQ(embedded(page)["layer"], "</script><b>x");
}

TEST(VizHtml, FullWaferIsDownsampledToTheBlockMaximumAndSaysSo) {
  DumpView d;
  d.width = 750, d.height = 994, d.interval_cycles = 100, d.cycles = 400;
  d.interval_starts = {0, 100, 200, 300};
  for (const char* name : {"fmac_cycles", "sram_bytes"}) {
    MetricGrid m{name, "cycles", {}};
    for (int i = 0; i < 4; ++i) m.frames.emplace_back(size_t(750) * 994, 1);
    d.pe_metrics.push_back(std::move(m));
  }
  d.pe_metrics[0].frames[2][size_t(500) * 750 + 601] = 77;
  uint32_t block = 0;
  const std::string page = render_html_viewer(d, tile_metrics(d), {}, &block);
  EXPECT_EQ(block, 4u);  // 994 / 256 rounded up
  const json j = embedded(page);
  const uint32_t gw = j["grid"]["width"], gh = j["grid"]["height"];
  EXPECT_EQ(gw, (750 + 3) / 4);
  EXPECT_EQ(gh, (994 + 3) / 4);
  EXPECT_EQ(j["metrics"][0]["frames"][2][size_t(500 / 4) * gw + 601 / 4], 77);
  EXPECT_EQ(j["metrics"][0]["max"], 77);
  EXPECT_NE(page.find("is downsampled for the page"), std::string::npos);
  // A smaller value budget makes the blocks bigger.
  EXPECT_GT(html_block(750, 994, 4, 2, {100'000, 256}), 4u);
}

}  // namespace

namespace {

// The fabric on the page: one entry per link between cells, its wavelets and backpressure per
// interval as the dump has them; per colour from the router lanes; the timelines as given.
TEST(VizHtml, EmbedsLinksPerColourAndTimelines) {
  DumpView d = wse::testing::demo_dump(12, 8, 3);
  MetricGrid bp{"backpressure_cycles", "cycles", {}};
  for (const auto& f : d.link_metrics[0].frames) {
    std::vector<uint32_t> v(f.size());
    for (size_t l = 0; l < v.size(); ++l) v[l] = l % 5 == 0 ? 7 : 0;
    bp.frames.push_back(v);
  }
  d.link_metrics.push_back(bp);
  // Two lanes: colour 3 at (2,1) sending east and south; colour 5 at (4,4) sending to its PE only.
  d.lanes = {{2, 1, 3, 0b0110}, {4, 4, 5, 0b10000}};
  MetricGrid lw{"wavelets", "wavelets", {}}, lb{"backpressure_cycles", "cycles", {}};
  for (uint32_t k = 0; k < 3; ++k) lw.frames.push_back({10 + k, 99}), lb.frames.push_back({k, 0});
  d.lane_metrics = {lw, lb};
  PeTimelines t;
  t.names = {"compute \u00b7 fmac", "@fmovs"};
  t.pes[{1, 2}][0] = {{10, 50, 0, 3}};
  t.pes[{1, 2}][1] = {{20, 30, 1, 1}};
  t.bars = 2;

  const json j = embedded(render_html_viewer(d, tile_metrics(d), {}, nullptr, &t));
  const json& f = j["fabric"];
  // One PE per cell: every hop link is drawn, plus colour 3's south link (no dump link: nothing used it).
  ASSERT_EQ(f["links"].size(), d.links.size() + 1);
  for (size_t l = 0; l < d.links.size(); ++l) {
    EXPECT_EQ(f["links"][l], json({d.links[l].x, d.links[l].y, d.links[l].dir}));
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(f["wavelets"][k][l], d.link_metrics[0].frames[k][l]);
      EXPECT_EQ(f["backpressure"][k][l], bp.frames[k][l]);
    }
  }
  ASSERT_EQ(f["colours"].size(), 1u);  // colour 5 goes to a PE only: no link between cells
  const json& c = f["colours"][0];
  EXPECT_EQ(c["colour"], 3);
  ASSERT_EQ(c["links"].size(), 2u);  // east (an existing link) and south (a new one)
  const json& east = f["links"][c["links"][0].get<size_t>()];
  EXPECT_EQ(east, json({2, 1, 1}));
  EXPECT_EQ(f["links"].back(), json({2, 1, 2}));
  EXPECT_EQ(f["wavelets"][1].back(), 0);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(c["wavelets"][k], json({10 + k, 10 + k}));
    EXPECT_EQ(c["backpressure"][k], json({k, k}));
  }
  EXPECT_EQ(j["timeline"]["names"], json(t.names));
  EXPECT_EQ(j["timeline"]["pes"]["1,2"]["0"], json({10, 50, 0, 3}));
  EXPECT_EQ(j["timeline"]["pes"]["1,2"]["1"], json({20, 30, 1, 1}));

  // Downsampled 2x2: only links that cross a cell edge, the busiest of those crossing it.
  HtmlOptions small;
  small.max_side = 6;
  uint32_t block = 0;
  const json s = embedded(render_html_viewer(d, tile_metrics(d), small, &block));
  ASSERT_EQ(block, 2u);
  ASSERT_FALSE(s["fabric"]["links"].empty());
  for (size_t i = 0; i < s["fabric"]["links"].size(); ++i) {
    const uint32_t cx = s["fabric"]["links"][i][0], cy = s["fabric"]["links"][i][1], dir = s["fabric"]["links"][i][2];
    uint32_t want = 0;
    for (size_t l = 0; l < d.links.size(); ++l)
      if (dir == 1 && d.links[l].x / 2 == cx && d.links[l].y / 2 == cy && d.links[l].x % 2 == 1) want = std::max(want, d.links[l].y == 4 ? 800u : d.links[l].x + 1);
    EXPECT_EQ(s["fabric"]["wavelets"][1][i], want) << i;
  }
  EXPECT_TRUE(s["timeline"].is_null());
}

}  // namespace
