// `wse trace`: the files it writes, its summary, and its errors (exit code 2).
#include <gtest/gtest.h>

#include "cli_support.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "tools/dump_view.hpp"

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path dir() { return wse::test::scratch_dir("wse_trace_cli_test"); }

fs::path config() {
  fs::path p = dir() / "gemv.yaml";
  std::ofstream(p) << "machine: wse2\nmesh: {width: 9, height: 7}\ngemv: {rows: 70, cols: 60, seed: 3}\n";
  return p;
}

TEST(TraceCli, WritesDumpTraceAndReportWithCongestion) {
  fs::path out = dir() / "out";
  fs::remove_all(out);
  Output o = wse("trace " + config().string() + " --layer gemv --interval 100 --rect 1,1,2,3 --threads 2 --out " +
                 out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  for (const char* s : {"hottest links", "hottest colours", "SRAM", "activity.wsad", "trace.json", "checksum"})
    EXPECT_NE(o.text.find(s), std::string::npos) << s << " not in:\n" << o.text;
  EXPECT_EQ(o.text.find("cycle "), std::string::npos) << "progress line in a pipe:\n" << o.text;

  nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  for (const char* key : {"cycles", "macs", "checksum", "congestion", "sram", "trace"}) EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_EQ(r["macs"], 70 * 60);
  EXPECT_FALSE(r["congestion"]["hottest_links"].empty());
  EXPECT_FALSE(r["congestion"]["colours"].empty());
  EXPECT_EQ(r["sram"]["buffers"].size(), 4u);
  EXPECT_EQ(r["trace"]["traced_pes"]["x0"], 1);
  EXPECT_EQ(r["trace"]["traced_pes"]["y1"], 3);

  // The same run as `wse run`: tracing changes nothing the wafer does.
  fs::path run_out = wse::test::fresh_dir(dir() / "run_out");
  ASSERT_EQ(wse("run " + config().string() + " --threads 1 --out " + run_out.string()).code, 0);
  nlohmann::json plain = nlohmann::json::parse(std::ifstream(run_out / "report.json"));
  EXPECT_EQ(r["checksum"], plain["checksum"]);
  EXPECT_EQ(r["cycles"], plain["cycles"]);

  wse::DumpView v = wse::load_dump_view(out / "activity.wsad");
  EXPECT_EQ(v.cycles, r["cycles"].get<uint64_t>());
  EXPECT_EQ(v.interval_cycles, 100u);
  EXPECT_EQ(v.layer, "gemv");
  nlohmann::json t = nlohmann::json::parse(std::ifstream(out / "trace.json"));
  int main_tracks = 0, microthread_tracks = 0;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1) {
      const std::string name = e["args"]["name"];
      (name.find(" ut") == std::string::npos ? main_tracks : microthread_tracks) += 1;
    }
  EXPECT_EQ(main_tracks, 2 * 3);         // x 1..2, y 1..3
  EXPECT_EQ(microthread_tracks, 2 * 3);  // each receives x on a microthread
}

TEST(TraceCli, UnknownLayerPassOrRectIsAUsageError) {
  const std::string cfg = config().string(), out = (dir() / "bad").string();
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--layer fc1", "--layer 'fc1'"},
      {"--pass bwd", "no backward pass"},
      {"--pass sideways", "expected fwd or bwd"},
      {"--rect 1,2,3", "--rect '1,2,3'"},
      {"--rect 3,0,1,0", "x0 <= x1"},
  };
  for (const Case& c : cases) {
    Output o = wse("trace " + cfg + " " + c.args + " --out " + out);
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.text;
    EXPECT_NE(o.text.find(c.message), std::string::npos) << c.args << ": " << o.text;
  }
}

}  // namespace
