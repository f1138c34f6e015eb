// `wse trace`: the files it writes, its summary, and its errors (exit code 2).
#include <gtest/gtest.h>

#include "cli_support.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <map>
#include <set>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "tools/dump_view.hpp"
#include "tools/pftrace_reader.hpp"

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
  Output o = wse("trace " + config().string() + " --layer gemv --interval 100 --pes 1,1,2,3 --threads 2 --format json --out " +
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
  EXPECT_EQ(r["trace"]["format"], "json");
  EXPECT_EQ(r["trace"]["bytes"], fs::file_size(out / "trace.json"));
  nlohmann::json t = nlohmann::json::parse(std::ifstream(out / "trace.json"));
  int main_tracks = 0, microthread_tracks = 0;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      const std::string name = e["args"]["name"];
      if (name.rfind("PE (", 0) != 0) continue;
      (name.find(" ut") == std::string::npos ? main_tracks : microthread_tracks) += 1;
    }
  EXPECT_EQ(main_tracks, 2 * 3);         // x 1..2, y 1..3
  EXPECT_EQ(microthread_tracks, 2 * 3);  // each receives x on a microthread
}

// Two wafers share the threads asked: the traced wafer's mesh gets its share, and the line and the
// report say what it got (the line said the count asked, 3, where the mesh ran on 1).
// Found by a long-run audit: the report's peak_rss_bytes was taken with the run's report, before
// the dump and the trace were written, where a trace's memory peaks (3.4 GiB reported, 8.8 GiB
// held). The reference: the child's maximum resident set as the kernel counts it for its parent
// (wait4), larger only by what the process took after writing its report (a sanitizer's exit checks).
// The fabric's "wavelet hops per cycle" counter, over its intervals, adds up to the run's hops:
// a 64 x 64 GEMV on an 8 x 8 grid sends x south (8 columns x 8 words x 7 hops) and partial sums
// east (8 rows x 8 words x 7 hops; leaving by the edge is no hop): 896, the report's
// `wavelet_hops`. (A mutation counting the links' backpressure there went unseen.) And --pes is
// bounded by the mesh's own axes: on a 2 x 64 mesh, rows 0-10 of both columns are 22 PEs, and a
// rectangle reaching column 3 is refused naming the mesh (the bounds were once the other axis's).
TEST(TraceCli, TheHopCounterAddsUpToTheRunsHopsAndPesAreBoundedByTheMesh) {
  fs::path cfg = dir() / "gemv8.yaml";
  std::ofstream(cfg) << "machine: wse2\nmesh: {width: 8, height: 8}\ngemv: {rows: 64, cols: 64, grid: {width: 8, height: 8}, seed: 7}\n";
  fs::path out = wse::test::fresh_dir(dir() / "hops");
  Output o = wse("trace " + cfg.string() + " --format json --interval 100 --detail counters --threads 1 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  ASSERT_EQ(r["wavelet_hops"], 896);
  const uint64_t cycles = r["cycles"].get<uint64_t>();
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "trace.json"));
  std::vector<std::pair<uint64_t, double>> points;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "wavelet hops per cycle") points.push_back({e["ts"].get<uint64_t>(), e["args"]["ratio"].get<double>()});
  ASSERT_FALSE(points.empty());
  double hops = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const uint64_t end = i + 1 < points.size() ? points[i + 1].first : cycles;
    hops += points[i].second * double(end - points[i].first);
  }
  EXPECT_NEAR(hops, 896.0, 1e-6);

  fs::path tall = dir() / "gemv_tall.yaml";
  std::ofstream(tall) << "machine: wse2\nmesh: {width: 2, height: 64}\ngemv: {rows: 64, cols: 4, seed: 7}\n";
  fs::path pes = wse::test::fresh_dir(dir() / "pes_tall");
  o = wse("trace " + tall.string() + " --pes 0,0,1,10 --threads 1 --out " + pes.string());
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(pes / "report.json"))["trace"]["traced_pes"]["count"], 22);
  o = wse("trace " + tall.string() + " --pes 0,0,3,9 --threads 1 --out " + wse::test::fresh_dir(dir() / "pes_wide").string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("2x64 mesh (x 0..1, y 0..63)"), std::string::npos) << o.text;
}

// A traced rectangle of more than 64 rows is grouped 64 rows at a time; one of 64 rows or fewer
// is not grouped at all (a mutation grouping exactly 64 into one "rows 0-63" went unseen).
TEST(TraceCli, TracedRowsAreGroupedSixtyFourAtATimeOnlyBeyondSixtyFour) {
  auto row_groups = [](uint32_t height) {
    fs::path cfg = dir() / ("gemv_rows" + std::to_string(height) + ".yaml");
    std::ofstream(cfg) << "machine: wse2\nmesh: {width: 2, height: " << height << "}\ngemv: {rows: " << height << ", cols: 4, seed: 7}\n";
    fs::path out = wse::test::fresh_dir(dir() / ("rows" + std::to_string(height)));
    Output o = wse("trace " + cfg.string() + " --detail tasks --threads 1 --out " + out.string());
    EXPECT_EQ(o.code, 0) << o.text;
    std::vector<std::string> groups;
    wse::read_pftrace(out / "trace.pftrace", {[&](const wse::PftraceTrack& t) {
                                                if (t.name.rfind("rows ", 0) == 0) groups.push_back(t.name);
                                              },
                                              {}, {}});
    return groups;
  };
  EXPECT_EQ(row_groups(64), std::vector<std::string>{});
  EXPECT_EQ(row_groups(65), (std::vector<std::string>{"rows 0-63", "rows 64-64"}));
}

TEST(TraceCli, ATracesPeakMemoryIsTakenAfterItsDumpIsWritten) {
  const fs::path out = wse::test::fresh_dir(dir() / "peak");
  const std::string cfg = (dir() / "peak.yaml").string();
  std::ofstream(cfg) << "machine: wse2\nmesh: {width: 32, height: 32}\ngemv: {rows: 1000, cols: 1000, seed: 7}\n";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
    execl(WSE_BINARY, WSE_BINARY, "trace", cfg.c_str(), "--threads", "1", "--interval", "1", "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(wait4(pid, &status, 0, &usage), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  const double held = double(usage.ru_maxrss) * 1024, reported = r["peak_rss_bytes"].get<double>();
  EXPECT_GT(r["trace"]["dump_bytes"].get<double>(), 3e7) << "the case needs a dump that dominates the memory";
  EXPECT_LE(reported, held);
  EXPECT_GE(reported, 0.75 * held) << "reported " << reported << " bytes, held " << held;
}

TEST(TraceCli, ATwoWaferConfigSaysTheThreadsItsWaferGot) {
  fs::path cfg = wse::test::write_file(dir() / "fc2w.yaml",
                                       "machine: wse2\nmesh: {width: 4, height: 3}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                                       "data: {train_samples: 48, eval_samples: 16}\ntraining: {batch_size: 12, num_csx: 2}\n"
                                       "optimizer: {kind: sgd, lr: 0.1}\n");
  fs::path out = wse::test::fresh_dir(dir() / "fc2w_out");
  Output o = wse("trace " + cfg.string() + " --layer fc1 --threads 3 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  // 3 over 2 wafers: 1 each, both running the step (it said "1 thread(s)" alone: a determinism audit).
  EXPECT_NE(o.text.find("every 1000 cycles, 2 thread(s): 2 wafers side by side, 1 worker(s) each"), std::string::npos) << o.text;
  nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_EQ(r["threads"], 1);
  EXPECT_EQ(r["threads_choice"]["asked"], 3);
  // The note speaks of the traced pass, as "threads" does (it said 2, both wafers' workers, beside
  // threads 1), and of the threads the step ran on in all (it said "the run used 1").
  EXPECT_NE(r["threads_choice"].value("note", "").find("the traced pass used 1; up to 2 wafers ran the step side by side, 2 thread(s) in all"),
            std::string::npos)
      << r.dump();
  EXPECT_EQ(r["threads_detail"]["wafers_at_once"], 2) << r.dump();
  EXPECT_EQ(r["threads_detail"]["workers_per_wafer"], 1) << r.dump();
  // The layer's figures are the traced wafer's, as the report's are: its 6 of the 12 samples,
  // (784 + 1 bias) x 16 x 6 MACs (layer.stats summed both wafers' MACs beside wafer 0's report: a review,
  // forty-fifth round).
  EXPECT_EQ(r["layer"]["stats"]["macs"], r["macs"]) << r.dump();
  EXPECT_EQ(r["macs"], (784 + 1) * 16 * 6) << r.dump();
}

// A training layer over the whole mesh (the default), in the native format: every PE's slices add
// up to its busy cycles in the dump, and all of them to the report's PE cycles.
TEST(TraceCli, TrainingLayerWholeMeshSlicesAddUpToBusyCycles) {
  fs::path cfg = wse::test::write_file(dir() / "fc.yaml",
                                       "machine: wse2\nmesh: {width: 4, height: 3}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                                       "data: {train_samples: 48, eval_samples: 16}\ntraining: {batch_size: 12}\n"
                                       "optimizer: {kind: sgd, lr: 0.1}\n");
  fs::path out = wse::test::fresh_dir(dir() / "fc_out");
  Output o = wse("trace " + cfg.string() + " --layer fc1 --pass fwd --interval 300 --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_EQ(r["trace"]["file"], "trace.pftrace");
  const wse::DumpView v = wse::load_dump_view(out / "activity.wsad");
  std::map<uint64_t, std::string> names;
  std::map<uint64_t, uint64_t> parent;
  std::map<std::string, uint64_t> busy;  // "PE (x,y)" -> datapath cycles of its slices
  uint64_t data_tasks = 0;
  const wse::PftraceSummary s = wse::read_pftrace(out / "trace.pftrace", {
      [&](const wse::PftraceTrack& t) { names[t.uuid] = t.name, parent[t.uuid] = t.parent; },
      [&](const wse::PftraceSlice& sl) {
        std::string pe = names[sl.track];
        if (pe.rfind("ut", 0) == 0) pe = names[parent[sl.track]];
        if (pe.rfind("PE (", 0) != 0) return;
        uint64_t n = sl.end - sl.start;
        if (sl.name[0] == '@') {
          n = 0;
          for (const char* k : {"fmac", "move"})
            if (const wse::PftraceArg* a = sl.arg(k)) n += a->number;
        } else if (const wse::PftraceArg* a = sl.arg("datapath_cycles")) {
          n = a->number;
        }
        if (sl.name.find(" c0") != std::string::npos) ++data_tasks;
        busy[pe] += n;
      },
      {}});
  EXPECT_EQ(s.slices, r["trace"]["slices"].get<uint64_t>());
  EXPECT_GT(data_tasks, 0u);
  const wse::MetricGrid* b = v.pe_metric("busy_cycles");
  ASSERT_NE(b, nullptr);
  uint64_t total = 0;
  size_t pes = 0;
  for (uint32_t y = 0; y < v.height; ++y)
    for (uint32_t x = 0; x < v.width; ++x) {
      uint64_t dumped = 0;
      for (const auto& f : b->frames) dumped += f[y * v.width + x];
      const std::string pe = "PE (" + std::to_string(x) + "," + std::to_string(y) + ")";
      EXPECT_EQ(busy[pe], dumped) << pe;
      total += busy[pe], pes += dumped > 0;
    }
  EXPECT_EQ(pes, 12u);
  const auto& c = r["pe_cycles"];
  EXPECT_EQ(total, c["receive"].get<uint64_t>() + c["fmac"].get<uint64_t>() + c["move"].get<uint64_t>());

  // The cluster's actors over the same step: a track group per actor, the traced pass among the
  // wafer's spans, and a critical path whose segments add up to the step's cycles.
  EXPECT_EQ(r["cluster_trace"]["file"], "cluster.pftrace");
  std::map<uint64_t, std::string> cnames;
  std::map<uint64_t, uint64_t> cparent;
  uint64_t critical = 0, pass = 0, instant_spans = 0;
  std::set<std::string> actors, descriptions;
  const wse::PftraceSummary cs = wse::read_pftrace(out / "cluster.pftrace", {
      [&](const wse::PftraceTrack& t) {
        cnames[t.uuid] = t.name, cparent[t.uuid] = t.parent;
        if (t.parent == 0 && t.name.rfind("critical path", 0) != 0) actors.insert(t.name);
        if (t.parent == 0) descriptions.insert(t.description);
      },
      [&](const wse::PftraceSlice& sl) {
        if (cnames[sl.track].rfind("critical path", 0) == 0) critical += sl.end - sl.start;
        if (cnames[cparent[sl.track]] == "wafer 0" && sl.name == "fc1 fwd") pass = sl.end - sl.start;
        // A span of no cycles (the user node's step begin) is drawn one cycle long but says 0.
        if (cnames[cparent[sl.track]] == "user node" && sl.end == sl.start + 1 && sl.arg("cycles") && sl.arg("cycles")->number == 0)
          ++instant_spans;
      },
      {}});
  // It said it was a layer trace "on a  wse2 mesh ... intervals of 0 cycles".
  ASSERT_EQ(descriptions.size(), 1u);
  EXPECT_EQ(descriptions.begin()->rfind("wse trace of step ", 0), 0u) << *descriptions.begin();
  EXPECT_NE(descriptions.begin()->find(" across the cluster's actors: 1 wafer(s), each a 4x3 wse2 mesh, from wafer cycle "),
            std::string::npos) << *descriptions.begin();
  EXPECT_GT(instant_spans, 0u);
  EXPECT_EQ(cs.slices, r["cluster_trace"]["slices"].get<uint64_t>());
  EXPECT_EQ(actors, (std::set<std::string>{"MemoryX", "swarmx 0.0", "wafer 0", "input worker 0", "user node"}));
  EXPECT_EQ(critical, r["cluster_trace"]["step_cycles"].get<uint64_t>());
  EXPECT_EQ(pass, r["cycles"].get<uint64_t>()) << "the wafer's fc1 fwd span is the traced run";
  // The cluster trace given to viz as the dump's trace: said to be that, not "another run's".
  Output cv = wse("viz " + (out / "activity.wsad").string() + " --trace " + (out / "cluster.pftrace").string() + " --out " +
                 wse::test::fresh_dir(dir() / "viz_cluster").string());
  EXPECT_EQ(cv.code, 2) << cv.text;
  EXPECT_NE(cv.text.find("cluster.pftrace: the cluster trace (the wse trace of step "), std::string::npos) << cv.text;
  EXPECT_NE(cv.text.find("give the layer's trace, trace.pftrace"), std::string::npos) << cv.text;
}

// The egress stream of a traced pass that is not the step's last (fc2 bwd: fc1 bwd follows it)
// has its slice on the host track, with every gradient wavelet the pass sent off the wafer. It
// was built from the egress ports when the trace was finished, after the whole step, and the
// later passes had restarted the ports: only the step's last pass kept its egress slice (a trace
// audit, forty-sixth round).
TEST(TraceCli, ATracedPassKeepsItsEgressStreamWhenLaterPassesFollowIt) {
  fs::path cfg = wse::test::write_file(dir() / "fc_egress.yaml",
                                       "machine: wse2\nmesh: {width: 4, height: 3}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                                       "data: {train_samples: 12, eval_samples: 0}\ntraining: {batch_size: 12}\n"
                                       "optimizer: {kind: sgd, lr: 0.1}\n");
  fs::path out = wse::test::fresh_dir(dir() / "fc_egress_out");
  Output o = wse("trace " + cfg.string() + " --layer fc2 --pass bwd --interval 200 --threads 1 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  const uint64_t gradients = r["layer"]["stats"]["gradient_wavelets"].get<uint64_t>();
  ASSERT_GT(gradients, 0u) << r["layer"].dump();
  std::map<uint64_t, std::string> names;
  uint64_t egress = 0, slices = 0, first = UINT64_MAX, last = 0;
  wse::read_pftrace(out / "trace.pftrace", {[&](const wse::PftraceTrack& t) { names[t.uuid] = t.name; },
                                            [&](const wse::PftraceSlice& sl) {
                                              if (sl.name != "egress stream") return;
                                              ++slices;
                                              if (const wse::PftraceArg* a = sl.arg("wavelets")) egress += uint64_t(a->number);
                                              first = std::min<uint64_t>(first, sl.start), last = std::max<uint64_t>(last, sl.end);
                                            },
                                            {}});
  EXPECT_EQ(slices, 1u);
  EXPECT_EQ(egress, gradients);
  // Within the traced pass (slices are in cycles from its start).
  EXPECT_LT(first, last);
  EXPECT_LE(last, r["cycles"].get<uint64_t>());
  // A window after the pass is refused before anything is written, the cluster trace included
  // (it was written first, and left with a record: the same audit).
  const fs::path late = wse::test::fresh_dir(dir() / "fc_late_out");
  const std::string from = std::to_string(r["cycles"].get<uint64_t>());
  o = wse("trace " + cfg.string() + " --layer fc2 --pass bwd --from " + from + " --threads 1 --out " + late.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("--from " + from + ": the layer (fc2, bwd) ran " + from + " cycles, so the window holds nothing"), std::string::npos)
      << o.text;
  EXPECT_FALSE(fs::exists(late)) << "left: " << (fs::exists(late / ".wse-run") ? "a record" : "a folder");
}

// Found by a profiling audit: a trace of another GEMV on the same mesh (the same machine, layer,
// pass and interval, so the same description) was drawn as the dump's timelines, bars to cycle
// 117 in a run of 105. A slice beyond the dump's run gives it away.
TEST(TraceCli, VizRefusesATraceOfAnotherConfigWhoseSlicesOutlastTheDump) {
  const fs::path small = wse::test::write_file(dir() / "g22.yaml", "machine: wse2\nmesh: {width: 2, height: 2}\nkernel: gemv\ngemv: {rows: 5, cols: 3}\n");
  const fs::path big = wse::test::write_file(dir() / "g22b.yaml", "machine: wse2\nmesh: {width: 2, height: 2}\nkernel: gemv\ngemv: {rows: 9, cols: 7}\n");
  const fs::path a = wse::test::fresh_dir(dir() / "other_a"), b = wse::test::fresh_dir(dir() / "other_b");
  ASSERT_EQ(wse("trace " + small.string() + " --threads 1 --interval 50 --out " + a.string()).code, 0);
  ASSERT_EQ(wse("trace " + big.string() + " --threads 1 --interval 50 --out " + b.string()).code, 0);
  const fs::path v = wse::test::fresh_dir(dir() / "other_v");
  Output o = wse("viz " + (a / "activity.wsad").string() + " --trace " + (b / "trace.pftrace").string() + " --out " + v.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("beyond the dump's run, cycles [0, 105): a trace of another run"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(v));
  // Its own trace is drawn.
  o = wse("viz " + (a / "activity.wsad").string() + " --trace " + (a / "trace.pftrace").string() + " --out " + v.string());
  EXPECT_EQ(o.code, 0) << o.text;
}

// The viewer said "No task or DSD op in this interval" for a PE `--pes` left out, for cycles
// outside `--from/--to`, and for every PE of a `--detail counters` trace (a viz audit): the trace
// now says what it kept, and the page carries it for the viewer to say so.
TEST(TraceCli, TheViewerKnowsWhichPesAndCyclesTheTraceKept) {
  auto scope_of = [](const fs::path& out, const std::string& args) {
    Output t = wse("trace " + config().string() + " --threads 1 --interval 50 " + args + " --out " + (out / "t").string());
    EXPECT_EQ(t.code, 0) << t.text;
    Output v = wse("viz " + (out / "t" / "activity.wsad").string() + " --out " + (out / "v").string());
    EXPECT_EQ(v.code, 0) << v.text;
    std::ifstream in(out / "v" / "index.html");
    const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string open = "<script type=\"application/json\" id=\"wse-data\">";
    const size_t a = page.find(open), b = page.find("</script>", a);
    EXPECT_NE(a, std::string::npos);
    return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()))["timeline"]["scope"];
  };
  const nlohmann::json part = scope_of(wse::test::fresh_dir(dir() / "scope_part"), "--pes 1,2,2,3 --from 60 --to 90");
  EXPECT_EQ(part, nlohmann::json({{"x0", 1}, {"y0", 2}, {"x1", 3}, {"y1", 4}, {"from", 60}, {"to", 90}, {"pe_slices", true}})) << part;
  const nlohmann::json all = scope_of(wse::test::fresh_dir(dir() / "scope_all"), "");
  EXPECT_EQ(all, nlohmann::json({{"x0", 0}, {"y0", 0}, {"x1", 9}, {"y1", 7}, {"from", 0}, {"to", nullptr}, {"pe_slices", true}})) << all;
  const nlohmann::json counters = scope_of(wse::test::fresh_dir(dir() / "scope_counters"), "--detail counters");
  EXPECT_EQ(counters["pe_slices"], false) << counters;
}

// A trace keeps every interval of its run: one far longer than its interval grew the recorder
// until the kernel killed the process. Now it asks for the memory as it doubles, and stops with
// the figure and what to change, exit 2, nothing written.
TEST(TraceCli, ARecorderOutgrowingTheMemoryStopsTheTraceWithAClearError) {
  const fs::path cfg = wse::test::write_file(dir() / "long_reduce.yaml",
                                             "machine: wse2\nmesh: {width: 64, height: 1}\nkernel: reduce\nreduce: {algorithm: chain, elements: 4000}\n");
  const fs::path out = wse::test::fresh_dir(dir() / "outgrown");
  for (const char* threads : {"1", "2"}) {
    Output o = wse("trace " + cfg.string() + " --threads " + threads + " --interval 1 --max-memory 2M --out " + out.string());
    EXPECT_EQ(o.code, 2) << o.text;
    EXPECT_NE(o.text.find("the activity recorder (2.00 MiB after "), std::string::npos) << o.text;
    EXPECT_NE(o.text.find("(raise --interval: the recorder keeps every interval of the run"), std::string::npos) << o.text;
    EXPECT_FALSE(fs::exists(out)) << "left " << out;
  }
  EXPECT_EQ(wse("trace " + cfg.string() + " --threads 1 --interval 100 --max-memory 2M --out " + out.string()).code, 0);
}

TEST(TraceCli, UnknownLayerPassOrRectIsAUsageError) {
  const std::string cfg = config().string(), out = (dir() / "bad").string();
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--layer fc1", "--layer 'fc1'"},
      {"--pass bwd", "no backward pass"},
      {"--pass sideways", "expected fwd or bwd"},
      {"--rect 1,2,3", "--pes '1,2,3'"},
      {"--pes 3,0,1,0", "x0 <= x1"},
      {"--pes 20,20,30,30", "selects no PE of the 9x7 mesh"},
      {"--pes 2,1,9,3", "--pes 2,1,9,3 reaches beyond the 9x7 mesh (x 0..8, y 0..6)"},  // was cut to the mesh silently
      {"--format xml", "--format"},
      {"--detail some", "expected all, tasks or counters"},
      {"--colours 3,x", "--colours '3,x'"},
      {"--colours 64", "0..63"},
      {"--colours 3,24", "colour 24 is not routable on machine 'wse2' (colours 0..23)"},  // had no track, silently
      {"--flow 3", "expected COLOUR@X,Y"},
      {"--flow 3@1,99", "outside the 9x7 mesh"},
      {"--flow 9@0,0", "sends nothing on colour 9"},
      {"--from 500 --to 100", "must be after --from"},
  };
  for (const Case& c : cases) {
    Output o = wse("trace " + cfg + " " + c.args + " --out " + wse::test::fresh_dir(out).string());
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.text;
    EXPECT_NE(o.text.find(c.message), std::string::npos) << c.args << ": " << o.text;
  }
}

}  // namespace
