// Activity dumps: what a dump reads back is exactly what the wafer counted, split exactly at
// interval boundaries, independent of the thread count; corrupt files give a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "kernels/gemv/gemv.hpp"
#include "io/memory_limit.hpp"
#include "schemas/activity_dump_generated.h"
#include "host/report.hpp"
#include "host/trace_command.hpp"
#include "activity_test_support.hpp"
#include "tools/dump_view.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse {
namespace {

using test::RecordedGemv;
using test::temp_file;
namespace fs = std::filesystem;

uint64_t sum_pe(const DumpView& v, const std::string& metric, uint32_t tile) {
  const MetricGrid* m = v.pe_metric(metric);
  EXPECT_NE(m, nullptr) << metric;
  uint64_t s = 0;
  for (const auto& f : m->frames) s += f[tile];
  return s;
}

TEST(ActivityDump, PerPeAndPerLinkTotalsEqualTheWafersCounters) {
  RecordedGemv g({12, 9}, 200, 150, 97, 1, "totals.wsad");
  const DumpView& v = g.view;
  EXPECT_EQ(v.width, 12u);
  EXPECT_EQ(v.height, 9u);
  EXPECT_EQ(v.cycles, g.run.cycles);
  EXPECT_EQ(v.interval_cycles, 97u);
  EXPECT_EQ(v.interval_starts.size(), (g.run.cycles + 96) / 97);
  EXPECT_EQ(v.layer, "gemv");
  EXPECT_EQ(v.pass, "fwd");
  EXPECT_EQ(v.machine, "wse2");
  for (const Pe& pe : g.wafer.pes()) {
    const uint32_t t = g.wafer.shape().id(pe.coord);
    const PeCounters& c = pe.counters;
    EXPECT_EQ(sum_pe(v, "receive_cycles", t), c.receive_cycles);
    EXPECT_EQ(sum_pe(v, "fmac_cycles", t), c.fmac_cycles);
    EXPECT_EQ(sum_pe(v, "move_cycles", t), c.move_cycles);
    EXPECT_EQ(sum_pe(v, "send_cycles", t), c.send_cycles);
    EXPECT_EQ(sum_pe(v, "stall_backpressure_cycles", t), c.stall_send_cycles);
    EXPECT_EQ(sum_pe(v, "setup_cycles", t), c.setup_cycles);
    EXPECT_EQ(sum_pe(v, "tasks", t), c.tasks);
    EXPECT_EQ(sum_pe(v, "wavelets_in", t), c.wavelets_in);
    EXPECT_EQ(sum_pe(v, "wavelets_out", t), c.wavelets_out);
    EXPECT_EQ(sum_pe(v, "macs", t), c.macs);
    EXPECT_EQ(sum_pe(v, "busy_cycles", t), c.busy_cycles());
    // Every cycle of every interval is accounted for exactly once.
    for (size_t k = 0; k < v.interval_starts.size(); ++k) {
      uint64_t all = 0;
      for (const char* m : {"busy_cycles", "stall_backpressure_cycles", "setup_cycles", "stall_input_cycles", "idle_cycles"})
        all += v.pe_metric(m)->frames[k][t];
      if (pe.program) {
        EXPECT_EQ(all, v.interval_length(k)) << to_string(pe.coord) << " interval " << k;
      }
    }
  }
  const auto& links = g.wafer.mesh().links();
  ASSERT_EQ(v.links.size(), links.size());
  const MetricGrid* lw = v.link_metric("wavelets");
  const MetricGrid* lb = v.link_metric("backpressure_cycles");
  ASSERT_TRUE(lw && lb);
  for (size_t i = 0; i < links.size(); ++i) {
    uint64_t w = 0, b = 0;
    for (size_t k = 0; k < v.interval_starts.size(); ++k) w += lw->frames[k][i], b += lb->frames[k][i];
    EXPECT_EQ(w, links[i].counters.wavelets);
    EXPECT_EQ(b, links[i].counters.backpressure_cycles);
    EXPECT_EQ(v.links[i].x, links[i].src % 12);
    EXPECT_EQ(v.links[i].dir, uint8_t(links[i].dir));
  }
  // Edge streams: every x went in, every y came out.
  uint64_t in = 0, out = 0;
  for (const auto& s : v.series) {
    for (uint64_t x : s.values) (s.name == "ingress_wavelets" ? in : out) += x;
  }
  EXPECT_EQ(in, 150u);
  EXPECT_EQ(out, 200u);
}

TEST(ActivityDump, TotalsEqualTheReport) {
  // 500 x 300 on 8 x 8: PEs stall on sends (412 cycles), so the report's backpressure_cycles must
  // count them beside the links' (a mutation dropping them passed on a GEMV without stalls).
  RecordedGemv g({8, 8}, 500, 300, 250, 1, "report.wsad");
  const RunConfig config;  // (a named one: GCC 12 warns falsely of a temporary's string)
  nlohmann::json r = make_report(config, g.wafer, g.run, g.kernel.result());
  const DumpView& v = g.view;
  auto total = [&](const std::string& m) {
    uint64_t s = 0;
    for (uint32_t t : v.tiles) s += sum_pe(v, m, t);
    return s;
  };
  EXPECT_EQ(total("macs"), r["macs"].get<uint64_t>());
  EXPECT_EQ(total("receive_cycles"), r["pe_cycles"]["receive"].get<uint64_t>());
  EXPECT_EQ(total("fmac_cycles"), r["pe_cycles"]["fmac"].get<uint64_t>());
  EXPECT_EQ(total("move_cycles"), r["pe_cycles"]["move"].get<uint64_t>());
  EXPECT_EQ(total("send_cycles"), r["pe_cycles"]["send"].get<uint64_t>());
  EXPECT_EQ(total("stall_backpressure_cycles"), r["pe_cycles"]["stall_send"].get<uint64_t>());
  EXPECT_EQ(total("tasks"), r["pe_cycles"]["tasks"].get<uint64_t>());
  ASSERT_GT(total("stall_backpressure_cycles"), 0u) << "the case needs PE send stalls";
  uint64_t hops = 0, backpressure = total("stall_backpressure_cycles"), ingress = 0;
  for (size_t k = 0; k < v.interval_starts.size(); ++k)
    for (size_t l = 0; l < v.links.size(); ++l) {
      if (v.links[l].kind == 0) hops += v.link_metric("wavelets")->frames[k][l];
      backpressure += v.link_metric("backpressure_cycles")->frames[k][l];
    }
  for (const auto& s : v.series)
    if (s.name == "ingress_wavelets") ingress = std::accumulate(s.values.begin(), s.values.end(), uint64_t(0));
  EXPECT_EQ(hops, r["wavelet_hops"].get<uint64_t>());
  EXPECT_EQ(backpressure, r["backpressure_cycles"].get<uint64_t>());
  // The busiest link's wavelets (a link carries one a cycle) over the run's cycles, from the dump
  // (a mutation dividing by one cycle more passed: no test read the figure).
  uint64_t busiest = 0;
  for (size_t l = 0; l < v.links.size(); ++l) {
    uint64_t w = 0;
    for (size_t k = 0; k < v.interval_starts.size(); ++k) w += v.link_metric("wavelets")->frames[k][l];
    busiest = std::max(busiest, w);
  }
  EXPECT_EQ(r["link_util_max"].get<double>(), double(busiest) / double(v.cycles));
  EXPECT_EQ(ingress + total("wavelets_out"), r["wavelets"].get<uint64_t>());
  EXPECT_EQ(v.cycles, r["cycles"].get<uint64_t>());
  uint32_t high = 0;
  for (uint32_t t : v.tiles) high = std::max(high, v.pe_metric("sram_high_water_bytes")->frames.back()[t]);
  EXPECT_EQ(high, r["sram_high_water_bytes"].get<uint32_t>());
}

// A PE whose start task charges 2500 fmac cycles at cycle 0, then 700 move cycles: the dump splits
// the cycles at each boundary where they elapse, not where the task started.
void long_task(PeContext& ctx) {
  float* y = ctx.at<float>(0u);
  ctx.fmac(y, y, 0.0f, 2500);
  ctx.mov(y, y, 1400);  // 700 cycles at 2 per cycle
}

TEST(ActivityDump, TaskCyclesAreSplitExactlyAtIntervalBoundaries) {
  Wafer wafer(test::spec(), {2, 1});
  Program p;
  p.name = "long";
  p.start_task = p.local(long_task);
  wafer.load({1, 0}, &p);
  wafer.allocate({1, 0}, "y", 2500 * 4);
  wafer.finalize(1);
  {
    ActivityRecorder rec(wafer, {"long", "fwd"}, 1000);
    WaferRun r = wafer.run(100000, rec.hooks());
    // The PE is free at 3200 and looks for work then: the run's length is 3201 (that last cycle,
    // after its last activity, is idle).
    ASSERT_EQ(r.cycles, 3201u);
    rec.write(temp_file("split.wsad"));
    DumpView v = load_dump_view(temp_file("split.wsad"));
    EXPECT_EQ(v.start_cycle, 0u);
    ASSERT_EQ(v.interval_starts, (std::vector<uint64_t>{0, 1000, 2000, 3000}));
    const uint32_t t = 1;
    std::vector<uint32_t> fmac, move, wait, idle, sram;
    for (size_t k = 0; k < 4; ++k) {
      fmac.push_back(v.pe_metric("fmac_cycles")->frames[k][t]);
      move.push_back(v.pe_metric("move_cycles")->frames[k][t]);
      wait.push_back(v.pe_metric("stall_input_cycles")->frames[k][t]);
      idle.push_back(v.pe_metric("idle_cycles")->frames[k][t]);
      sram.push_back(v.pe_metric("sram_bytes")->frames[k][t]);
    }
    EXPECT_EQ(fmac, (std::vector<uint32_t>{1000, 1000, 500, 0}));
    EXPECT_EQ(move, (std::vector<uint32_t>{0, 0, 500, 200}));
    EXPECT_EQ(wait, (std::vector<uint32_t>{0, 0, 0, 0}));
    EXPECT_EQ(idle, (std::vector<uint32_t>{0, 0, 0, 1}));
    EXPECT_EQ(sram, (std::vector<uint32_t>{10000, 10000, 10000, 10000}));
    EXPECT_EQ(v.pe_metric("tasks")->frames[0][t], 1u);
    // The tile without a program stores nothing, and the reader counts it idle every cycle (it
    // drew it at 0 idle cycles, beside a tile with only a route at the run's length).
    EXPECT_EQ(v.tiles, std::vector<uint32_t>{1});
    std::vector<uint32_t> idle0, fmac0;
    for (size_t k = 0; k < 4; ++k)
      idle0.push_back(v.pe_metric("idle_cycles")->frames[k][0]), fmac0.push_back(v.pe_metric("fmac_cycles")->frames[k][0]);
    EXPECT_EQ(idle0, (std::vector<uint32_t>{1000, 1000, 1000, 201}));
    EXPECT_EQ(fmac0, (std::vector<uint32_t>{0, 0, 0, 0}));
  }
}

// Found by a profiling audit: in an FC backward pass a microthread's move takes the datapath from
// the task's multiply-adds for a cycle, pushing them a cycle later; the dump counted the task's
// cycles back to back from its start, so an interval held an fmac and a move in one cycle (216
// one-cycle intervals of fc1 bwd held two), a later one a cycle of "waiting for input" that was the
// delayed multiply-add, and the run's input wait was 39 cycles at an interval of 1 and 21 at 50.
// Every PE's time split adds up to each interval's length, and its totals are the same at any
// interval.
TEST(ActivityDump, AMicrothreadsCycleDelaysTheTasksWorkInTheSplitToo) {
  const std::filesystem::path cfg = test::scratch_file("fc_tiny.yaml");
  std::ofstream(cfg) << "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 12, 10]}\n"
                        "data: {train_samples: 4, eval_samples: 0}\ntraining: {batch_size: 4, log_every: 1}\n"
                        "optimizer: {kind: sgd, lr: 0.01}\n";
  const char* split[] = {"receive_cycles", "fmac_cycles", "move_cycles", "stall_backpressure_cycles", "setup_cycles", "stall_input_cycles",
                         "idle_cycles"};
  std::map<std::string, std::vector<uint64_t>> totals[2];
  for (Cycle interval : {Cycle(1), Cycle(50)}) {
    TraceOptions opt;
    opt.config = cfg;
    opt.layer = "fc1";
    opt.pass = "bwd";
    opt.interval = interval;
    opt.threads = 1;
    opt.out = test::process_scratch() / ("fc_tiny_" + std::to_string(interval));
    std::filesystem::remove_all(opt.out);
    const TraceResult r = run_trace(opt);
    const DumpView v = load_dump_view(r.dump_file);
    ASSERT_EQ(v.tiles.size(), 8u);
    auto& total = totals[interval == 1 ? 0 : 1];
    size_t wrong = 0;
    for (size_t k = 0; k < v.interval_starts.size(); ++k) {
      const uint64_t len = (k + 1 < v.interval_starts.size() ? v.interval_starts[k + 1] : v.cycles) - v.interval_starts[k];
      for (size_t t = 0; t < v.tiles.size(); ++t) {
        uint64_t sum = 0;
        for (const char* m : split) {
          const uint64_t x = v.pe_metric(m)->frames[k][t];
          sum += x;
          auto& tot = total[m];
          tot.resize(v.tiles.size());
          tot[t] += x;
        }
        wrong += sum != len;
      }
    }
    EXPECT_EQ(wrong, 0u) << "intervals of " << interval << " whose split is not their length";
  }
  for (const char* m : split) EXPECT_EQ(totals[0][m], totals[1][m]) << m << " at an interval of 1 and of 50";
  EXPECT_GT(totals[0]["move_cycles"][0], 0u);
}

// 150 fmac cycles at cycle 0, and nothing after.
void short_task(PeContext& ctx) {
  float* y = ctx.at<float>(0u);
  ctx.fmac(y, y, 0.0f, 150);
}

// Found by a source review of the engine: the engine stops once no tile is due, and with
// hop_latency_cycles > 1 the run's end (its last egress arrival + 1) lies beyond that; the
// boundaries in between were never sampled, so the dump's last interval ran longer than
// interval_cycles and `wse viz` refused the dump `wse trace` had just written. Every boundary
// start + k * interval before the end is sampled, then the end.
TEST(ActivityDump, EveryBoundaryUpToTheRunsEndIsSampled) {
  for (unsigned threads : {1u, 2u})
    for (Cycle interval = 1; interval <= 15; ++interval) {
      MachineSpec spec;
      spec.io_bytes_per_cycle = 0, spec.hop_latency_cycles = 3;
      Wafer wafer(spec, {3, 2});
      Mesh& m = wafer.mesh();
      for (uint32_t x = 0; x < 3; ++x) m.set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
      IngressPort& in = m.add_ingress({0, 0}, Dir::West);
      EgressPort& out = m.add_egress({2, 0}, Dir::East);
      for (uint32_t k = 0; k < 4; ++k) in.enqueue(Wavelet{k, 0, 0});
      wafer.finalize(threads);
      wafer.idle_until(5);  // a run starting past 0: boundaries count from its start
      std::vector<Cycle> seen;
      RunHooks hooks;
      hooks.sample_interval = interval;
      hooks.sample = [&](Cycle b) { seen.push_back(b); };
      const WaferRun r = wafer.run(1000, hooks);
      const Cycle end = r.start + r.cycles;
      ASSERT_EQ(end, out.received().back().cycle + 1);
      ASSERT_GT(end, r.engine.last_active + 1) << "the case needs an arrival after the last step";
      std::vector<Cycle> expected;
      for (Cycle b = r.start + interval; b < end; b += interval) expected.push_back(b);
      expected.push_back(end);
      EXPECT_EQ(seen, expected) << "interval " << interval << ", " << threads << " thread(s)";
    }
}

TEST(ActivityDump, APesCyclesAfterItsLastActivityAreIdleNotWaitingForInput) {
  // Two PEs: one works for 150 cycles, the other for 3200 (long_task), so the run lasts 3201
  // cycles. The first PE's last active interval is its first, [0, 1000): 150 cycles of fmac, and
  // the 850 after its last activity are idle, as every later interval is. (They were counted as
  // waiting for input until 2026-11-28: the whole of a PE's last active interval was.)
  Wafer wafer(test::spec(), {2, 1});
  Program brief, long_one;
  brief.name = "brief", long_one.name = "long";
  brief.start_task = brief.local(short_task);
  long_one.start_task = long_one.local(long_task);
  wafer.load({0, 0}, &brief);
  wafer.load({1, 0}, &long_one);
  wafer.allocate({0, 0}, "y", 150 * 4);
  wafer.allocate({1, 0}, "y", 2500 * 4);
  wafer.finalize(1);
  ActivityRecorder rec(wafer, {"brief", "long"}, 1000);
  WaferRun r = wafer.run(100000, rec.hooks());
  ASSERT_EQ(r.cycles, 3201u);
  EXPECT_EQ(wafer.pes()[0].active_end(), 150u);
  EXPECT_EQ(wafer.pes()[1].active_end(), 3200u);
  rec.write(temp_file("tail.wsad"));
  DumpView v = load_dump_view(temp_file("tail.wsad"));
  ASSERT_EQ(v.interval_starts, (std::vector<uint64_t>{0, 1000, 2000, 3000}));
  std::vector<uint32_t> fmac, wait, idle;
  for (size_t k = 0; k < 4; ++k) {
    fmac.push_back(v.pe_metric("fmac_cycles")->frames[k][0]);
    wait.push_back(v.pe_metric("stall_input_cycles")->frames[k][0]);
    idle.push_back(v.pe_metric("idle_cycles")->frames[k][0]);
  }
  EXPECT_EQ(fmac, (std::vector<uint32_t>{150, 0, 0, 0}));
  EXPECT_EQ(wait, (std::vector<uint32_t>{0, 0, 0, 0}));
  EXPECT_EQ(idle, (std::vector<uint32_t>{850, 1000, 1000, 201}));
  // The long PE is busy to 3200; its one cycle after is idle.
  EXPECT_EQ(v.pe_metric("idle_cycles")->frames[3][1], 1u);
  EXPECT_EQ(v.pe_metric("stall_input_cycles")->frames[3][1], 0u);
}

TEST(ActivityDump, SramOccupancyEqualsTheNamedAllocations) {
  RecordedGemv g({7, 6}, 61, 45, 100, 1, "sram.wsad");
  const DumpView& v = g.view;
  std::map<std::string, const MetricGrid*> buffers;
  for (const auto& b : v.sram_buffers) buffers[b.name] = &b;
  EXPECT_EQ(buffers.size(), 4u);  // vars, A, y, psum
  for (const Pe& pe : g.wafer.pes()) {
    const uint32_t t = g.wafer.shape().id(pe.coord);
    uint64_t named = 0;
    for (const SramAllocation& a : pe.sram.allocations()) {
      named += a.bytes;
      const std::string& name = g.wafer.names().name(a.name);
      ASSERT_TRUE(buffers.count(name)) << name;
      EXPECT_EQ(buffers[name]->frames.at(0)[t], a.bytes) << name << " at " << to_string(pe.coord);
    }
    uint64_t in_buffers = 0;
    for (const auto& [name, grid] : buffers) in_buffers += grid->frames[0][t];
    EXPECT_EQ(in_buffers, named);
    for (const auto& frame : v.pe_metric("sram_bytes")->frames) EXPECT_EQ(frame[t], named);
    EXPECT_EQ(v.pe_metric("sram_high_water_bytes")->frames.back()[t], pe.sram.high_water());
  }
  // GEMV's A tile: rows x cols of the PE's block, 4 bytes each (8-byte aligned).
  EXPECT_EQ(buffers["A"]->frames[0][0], ((61 / 6) * (45 / 7) * 4 + 7) / 8 * 8);
}

void expect_usage_error(const fs::path& p, const std::string& fragment) {
  try {
    load_dump_view(p);
    ADD_FAILURE() << "no error for " << p;
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(p.string()), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(ActivityDump, CorruptOrTruncatedFilesGiveAClearError) {
  RecordedGemv g({5, 4}, 40, 30, 50, 1, "good.wsad");
  const std::vector<uint8_t>& good = g.bytes;
  auto write = [](const std::string& name, const std::vector<uint8_t>& b) {
    fs::path p = temp_file(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return p;
  };
  expect_usage_error(temp_file("does-not-exist.wsad"), "file not found");
  expect_usage_error(write("empty.wsad", {}), "not an activity dump");
  expect_usage_error(write("text.wsad", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'}), "not an activity dump");
  for (size_t keep : {size_t(8), size_t(64), good.size() / 2, good.size() - 1})
    expect_usage_error(write("cut.wsad", {good.begin(), good.begin() + long(keep)}), "corrupt or truncated");
  // A root offset pointing past the end.
  std::vector<uint8_t> bad = good;
  bad[0] = 0xff, bad[1] = 0xff, bad[2] = 0xff, bad[3] = 0x7f;
  expect_usage_error(write("root.wsad", bad), "corrupt");
  // Flipping bytes anywhere never crashes: either the verifier, the column checks or nothing
  // notices (a changed number), but the reader always returns or throws UsageError.
  for (size_t i = 0; i < good.size(); i += 7) {
    std::vector<uint8_t> flip = good;
    flip[i] ^= 0x5a;
    fs::path p = write("flip.wsad", flip);
    try {
      load_dump_view(p);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos);
    }
  }
}

// A dump whose header and columns disagree, or whose dense view would not fit: named, never
// a crash or a bad_alloc. Built with the FlatBuffers builder as a foreign writer would.
std::vector<uint8_t> dump_bytes(uint32_t width, uint32_t height, size_t intervals, uint32_t column_count,
                                uint64_t interval_cycles = 10, uint64_t cycles = 0, const std::string& name = "fmac_cycles",
                                size_t entries = 1) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<uint64_t> starts(intervals);
  for (size_t k = 0; k < intervals; ++k) starts[k] = k * 10;
  auto tiles = fb::CreateColumn(fbb, 1, fbb.CreateVector(std::vector<uint8_t>{0}));
  std::vector<flatbuffers::Offset<fb::Column>> frames;
  for (size_t k = 0; k < intervals; ++k) frames.push_back(fb::CreateColumn(fbb, column_count, fbb.CreateVector(std::vector<uint8_t>(column_count, 1))));
  auto metric = fb::CreateMetric(fbb, fbb.CreateString(name), fbb.CreateString("cycles"), fbb.CreateVector(frames));
  auto metrics = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Metric>>(entries, metric));  // entries: one table, pointed at
  auto st = fbb.CreateVector(starts);
  fb::ActivityDumpBuilder b(fbb);
  b.add_width(width);
  b.add_height(height);
  b.add_interval_cycles(interval_cycles);
  b.add_cycles(cycles ? cycles : intervals * 10);
  b.add_interval_starts(st);
  b.add_tiles(tiles);
  b.add_pe_metrics(metrics);
  fb::FinishActivityDumpBuffer(fbb, b.Finish());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(ActivityDump, ColumnsMustMatchTheHeaderAndTheViewMustFit) {
  auto write = [](const std::string& name, const std::vector<uint8_t>& b) {
    fs::path p = temp_file(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return p;
  };
  EXPECT_EQ(load_dump_view(write("one.wsad", dump_bytes(4, 3, 2, 1))).pe_metric("fmac_cycles")->frames[1][0], 1u);
  expect_usage_error(write("column.wsad", dump_bytes(4, 3, 2, 2)), "a column holds 2 values, expected 1");
  // 65536 x 65536 tiles over 50 intervals in a few hundred bytes: the dense view would need
  // terabytes, so it is refused with the figure before anything is allocated.
  expect_usage_error(write("huge.wsad", dump_bytes(65536, 65536, 50, 1)), "viewing it (a 65536x65536 mesh over 50 intervals) needs about");
  set_memory_limit(64 << 10);
  expect_usage_error(write("small.wsad", dump_bytes(200, 100, 2, 1)), "but only 64.0 KiB is available");
  set_memory_limit(0);
}

// A dump with its header edited: an interval of 0 cycles was drawn ("3 intervals of 0 cycles"),
// and `cycles` of 10^12 made the viewer spread the last interval's wavelets over 10^12 cycles.
TEST(ActivityDump, IntervalsLongerThanTheHeadersOrOfNoCyclesAreRefused) {
  auto write = [](const std::string& name, const std::vector<uint8_t>& b) {
    fs::path p = temp_file(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return p;
  };
  EXPECT_EQ(load_dump_view(write("short_last.wsad", dump_bytes(4, 3, 3, 1, 10, 21))).cycles, 21u);  // a last interval of 1
  expect_usage_error(write("interval0.wsad", dump_bytes(4, 3, 3, 1, 0)), "field 'interval_cycles' is 0");
  expect_usage_error(write("long_last.wsad", dump_bytes(4, 3, 3, 1, 10, 1'000'000'000'000)),
                     "interval 2 is 999999999980 cycles long, beyond the 10 of field 'interval_cycles' (field 'cycles' 1000000000000)");
  expect_usage_error(write("long_mid.wsad", dump_bytes(4, 3, 3, 1, 5)), "interval 0 is 10 cycles long, beyond the 5");
}

// Found by a fuzzing campaign of large inputs: many entries of a dump may point at one metric, and
// each took a copy of its name (a megabyte's name 3000 times: 5.9 GB, past --max-memory); two
// metrics of one name drew one picture over the other, exit 0.
TEST(ActivityDump, LongNamesAndNamesGivenTwiceAreRefused) {
  auto write = [](const std::string& name, const std::vector<uint8_t>& b) {
    fs::path p = temp_file(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return p;
  };
  EXPECT_EQ(load_dump_view(write("name256.wsad", dump_bytes(4, 3, 2, 1, 10, 0, std::string(256, 'm')))).pe_metrics.size(), 1u);
  expect_usage_error(write("name257.wsad", dump_bytes(4, 3, 2, 1, 10, 0, std::string(257, 'm'))), "a name of 257 bytes (at most 256 expected)");
  expect_usage_error(write("twice.wsad", dump_bytes(4, 3, 2, 1, 10, 0, "fmac_cycles", 2)), "PE metric 'fmac_cycles' given twice");
  // A name holding an escape reached the terminal raw in `wse viz`'s list of metrics (an error
  // audit, forty-fourth round): no name wse writes holds a control byte.
  expect_usage_error(write("escape.wsad", dump_bytes(4, 3, 2, 1, 10, 0, "x\x1b[2J")), "a name holding a control byte: 'x\\x1b[2J'");
  expect_usage_error(write("newline.wsad", dump_bytes(4, 3, 2, 1, 10, 0, "two\nlines")), "'two\\x0alines'");
}

}  // namespace
}  // namespace wse
