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
