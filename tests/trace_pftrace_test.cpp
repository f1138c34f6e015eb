// The native Perfetto trace of a recorded layer: the file decodes (with protoc against the
// project's .proto, and packet by packet with libprotobuf), every PE's slices add up to its busy
// cycles, the counter tracks hold what the activity dump holds, and --from/--to, --detail,
// --colours and --flow narrow or extend it as they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "activity_test_support.hpp"
#include "pe_test_support.hpp"
#include "tools/perfetto/perfetto_trace.pb.h"
#include "tools/pftrace_reader.hpp"
#include "tools/pe_timelines.hpp"
#include "host/cluster_trace.hpp"

#include <nlohmann/json.hpp>

namespace wse {
namespace {

// Everything a trace holds, by track name path ("PEs (gemv fwd)/row 0/PE (0,0)/ut0").
struct Decoded {
  std::map<uint64_t, PftraceTrack> tracks;
  std::map<uint64_t, std::vector<PftraceSlice>> slices;
  std::map<uint64_t, std::vector<PftraceCounter>> counters;
  PftraceSummary summary;

  explicit Decoded(const std::filesystem::path& f) {
    summary = read_pftrace(f, {[&](const PftraceTrack& t) { tracks[t.uuid] = t; },
                               [&](const PftraceSlice& s) { slices[s.track].push_back(s); },
                               [&](const PftraceCounter& c) { counters[c.track].push_back(c); }});
  }
  std::string path(uint64_t uuid) const {
    const PftraceTrack& t = tracks.at(uuid);
    return t.parent ? path(t.parent) + "/" + t.name : t.name;
  }
  // The track whose path ends with `suffix` (exactly one).
  uint64_t find(const std::string& suffix) const {
    uint64_t found = 0;
    for (const auto& [id, t] : tracks) {
      const std::string p = path(id);
      if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
        EXPECT_EQ(found, 0u) << "two tracks end with " << suffix;
        found = id;
      }
    }
    return found;
  }
  const std::vector<PftraceSlice>& on(uint64_t track) const {
    static const std::vector<PftraceSlice> none;
    auto it = slices.find(track);
    return it == slices.end() ? none : it->second;
  }
  std::vector<uint64_t> children(uint64_t parent) const {
    std::vector<uint64_t> out;
    for (const auto& [id, t] : tracks)
      if (t.parent == parent) out.push_back(id);
    return out;
  }
  // A counter's value at cycle `at` (its last point at or before it).
  double value_at(uint64_t track, Cycle at) const {
    double v = 0;
    auto it = counters.find(track);
    if (it == counters.end()) return 0;
    for (const PftraceCounter& c : it->second)
      if (c.at <= at) v = c.value;
    return v;
  }
};

// Datapath cycles of a slice as the trace states them: a task lasts its datapath cycles unless
// it says otherwise (datapath_cycles); a DSD op says its cycles as fmac or move.
uint64_t datapath(const PftraceSlice& s) {
  if (s.name.rfind("@", 0) == 0) {
    uint64_t n = 0;
    for (const char* k : {"fmac", "move"})
      if (const PftraceArg* a = s.arg(k)) n += a->number;
    return n;
  }
  if (const PftraceArg* a = s.arg("datapath_cycles")) return a->number;
  return s.end - s.start;
}

int protoc_decode(const std::filesystem::path& trace, const std::filesystem::path& text) {
  const std::string cmd = std::string(WSE_PROTOC) + " --decode=perfetto.protos.Trace -I " + WSE_SOURCE_DIR +
                          " tools/perfetto/perfetto_trace.proto < " + trace.string() + " > " + text.string() + " 2>&1";
  return std::system(("cd " + std::string(WSE_SOURCE_DIR) + " && " + cmd).c_str());
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

TEST(TracePftrace, DecodesAndAgreesWithTheWaferAndTheDump) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 20;  // rate-limited edges: backpressure through the mesh
  test::RecordedGemv g({8, 6}, 90, 80, 40, 2, "pftrace.wsad", spec);

  // protoc, against the project's .proto, reads every packet; so does the checking reader.
  const auto text_file = test::temp_file("pftrace.txt");
  ASSERT_EQ(protoc_decode(g.trace_file, text_file), 0) << test::read_bytes(text_file).substr(0, 2000);
  const std::string text = test::read_bytes(text_file);
  const Decoded d(g.trace_file);
  EXPECT_EQ(count(text, "\npacket {"), d.summary.packets - 1);  // the first has no newline before it
  EXPECT_EQ(count(text, "type: TYPE_SLICE_BEGIN"), d.summary.slices);
  EXPECT_EQ(count(text, "type: TYPE_SLICE_END"), d.summary.slices);
  EXPECT_EQ(count(text, "type: TYPE_COUNTER"), d.summary.counter_points);
  EXPECT_EQ(d.summary.slices, g.stats.slices);
  // What the report and summary line say the file holds (they counted a point per interval and
  // counter, repeats the writers leave out included: 1,883 for a file of 693).
  EXPECT_EQ(d.summary.counter_points, g.stats.counter_points);
  EXPECT_EQ(d.summary.bytes, std::filesystem::file_size(g.trace_file));

  const size_t n = g.view.interval_starts.size();
  const uint32_t W = g.view.width;
  const MetricGrid* sram = g.view.pe_metric("sram_bytes");
  const MetricGrid* queue = g.view.pe_metric("input_queue_occupancy");
  const MetricGrid* busy = g.view.pe_metric("busy_cycles");
  const MetricGrid* lw = g.view.link_metric("wavelets");
  const MetricGrid* lb = g.view.link_metric("backpressure_cycles");
  ASSERT_TRUE(sram && queue && busy && lw && lb);

  size_t pes = 0, level_changes = 0;
  for (const Pe& pe : g.wafer.pes()) {
    if (!pe.program) continue;
    ++pes;
    const std::string name = "/PE " + to_string(pe.coord);
    const uint64_t main = d.find(name);
    ASSERT_NE(main, 0u) << name;
    // Slices: in order and apart on each thread's track; their datapath cycles add up to the
    // PE's busy cycles (the wafer's counters and the dump's, summed over the intervals).
    uint64_t cycles = 0, fmac = 0;
    std::vector<uint64_t> threads = {main};
    for (uint64_t c : d.children(main))
      if (!d.tracks.at(c).counter) threads.push_back(c);
    for (uint64_t t : threads) {
      Cycle prev = 0;
      for (const PftraceSlice& s : d.on(t)) {
        EXPECT_GE(s.start, prev) << d.path(t);
        EXPECT_LE(s.end, g.run.cycles);
        prev = s.end;
        cycles += datapath(s);
        if (s.name.find("\u00b7 fmac") != std::string::npos || s.name == "@fmacs") fmac += datapath(s);
      }
    }
    const PeCounters& c = pe.counters;
    EXPECT_EQ(cycles, c.receive_cycles + c.fmac_cycles + c.move_cycles) << name;
    uint64_t dumped = 0;
    for (size_t k = 0; k < n; ++k) dumped += busy->frames[k][size_t(pe.coord.y) * W + pe.coord.x];
    EXPECT_EQ(cycles, dumped) << name;
    EXPECT_EQ(c.receive_cycles, 0u);  // GEMV runs local tasks only: no receive in the split below
    EXPECT_EQ(fmac, c.fmac_cycles) << name;

    // Counters: at every interval's start, the dump's value for that interval; a level (SRAM
    // bytes, input queue wavelets: read at the interval's end) from the interval's end, the level
    // of the interval before until then.
    const uint64_t sram_t = d.find(name + "/SRAM bytes"), queue_t = d.find(name + "/input queue wavelets");
    const uint64_t util_t = d.find(name + "/busiest link utilization"), bp_t = d.find(name + "/link backpressure cycles");
    ASSERT_TRUE(sram_t && queue_t && util_t && bp_t) << name;
    const TileId tile = g.wafer.shape().id(pe.coord);
    for (size_t k = 0; k < n; ++k) {
      const Cycle at = g.view.interval_starts[k];
      const Cycle end = at + g.view.interval_length(k);
      EXPECT_EQ(d.value_at(sram_t, end), sram->frames[k][tile]) << name << " interval " << k;
      EXPECT_EQ(d.value_at(queue_t, end), queue->frames[k][tile]) << name << " interval " << k;
      if (k > 0) {
        EXPECT_EQ(d.value_at(sram_t, end - 1), sram->frames[k - 1][tile]) << name << " interval " << k;
        EXPECT_EQ(d.value_at(queue_t, end - 1), queue->frames[k - 1][tile]) << name << " interval " << k;
        level_changes += queue->frames[k][tile] != queue->frames[k - 1][tile];
      }
      uint64_t busiest = 0, bp = 0;
      for (size_t l = 0; l < g.view.links.size(); ++l) {
        const LinkInfo& li = g.view.links[l];
        if (li.y * W + li.x != tile) continue;
        busiest = std::max<uint64_t>(busiest, lw->frames[k][l]);
        bp += lb->frames[k][l];
      }
      EXPECT_DOUBLE_EQ(d.value_at(util_t, at), double(busiest) / double(g.view.interval_length(k))) << name;
      EXPECT_EQ(d.value_at(bp_t, at), bp) << name;
    }
  }
  EXPECT_EQ(g.stats.pes, pes);
  EXPECT_GT(level_changes, 0u);  // (else the check of where a level starts could not fail)

  // Wafer-wide counters against the wafer's own counters and the dump.
  uint64_t bp_sum = 0, link_bp = 0;
  const uint64_t bp_t = d.find("Fabric (gemv fwd)/link backpressure cycles");
  for (size_t k = 0; k < n; ++k) bp_sum += uint64_t(d.value_at(bp_t, g.view.interval_starts[k]));
  for (const Link& l : g.wafer.mesh().links()) link_bp += l.counters.backpressure_cycles;
  EXPECT_EQ(bp_sum, link_bp);
  EXPECT_GT(link_bp, 0u);
  uint64_t sram_now = 0;
  for (const Pe& pe : g.wafer.pes()) sram_now += pe.sram.bytes_in_use();
  EXPECT_EQ(d.value_at(d.find("SRAM bytes in use (wafer)"), g.view.interval_starts[n - 1] + g.view.interval_length(n - 1)), sram_now);
  uint32_t colour_tracks = 0;  // (a renamed track would otherwise leave this loop checking nothing)
  for (uint32_t c = 0; c < g.view.colours; ++c) {
    const uint64_t t = d.find("/c" + std::to_string(c) + " wavelets per cycle");
    if (!t) continue;
    ++colour_tracks;
    for (size_t k = 0; k < n; ++k)
      EXPECT_DOUBLE_EQ(d.value_at(t, g.view.interval_starts[k]),
                       double(g.view.colour_metrics[0].frames[k][c]) / double(g.view.interval_length(k)));
  }
  EXPECT_GT(colour_tracks, 0u);

  // Stream phases: MemoryX's ingress stream, then the results leaving to the host.
  const auto& in = d.on(d.find("Streams (MemoryX, host)/MemoryX"));
  const auto& out = d.on(d.find("Streams (MemoryX, host)/host"));
  ASSERT_EQ(in.size(), 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(in[0].arg("wavelets")->number, 80u);
  EXPECT_EQ(out[0].arg("wavelets")->number, 90u);
  Cycle first = kNever, last = 0;
  for (const EgressPort& p : g.wafer.mesh().egress_ports())
    for (const EgressArrival& a : p.received()) first = std::min(first, a.cycle), last = std::max(last, a.cycle);
  EXPECT_EQ(out[0].start, first);
  EXPECT_EQ(out[0].end, last + 1);
}

TEST(TracePftrace, WindowDetailAndColoursNarrowIt) {
  const Cycle from = 100, to = 300;
  test::RecordedGemv all({6, 4}, 50, 40, 50, 1, "narrow_all.wsad");
  const Decoded a(all.trace_file);
  test::RecordedGemv win({6, 4}, 50, 40, 50, 1, "narrow_win.wsad", {}, {TraceDetail::All, {1, 1, 3, 3}, from, to, {}, {}});
  const Decoded w(win.trace_file);
  // Only PEs x 1..2, y 1..2 have tracks; their slices all overlap [from, to), and are the ones the
  // full trace has there.
  EXPECT_EQ(win.stats.pes, 4u);
  EXPECT_EQ(w.find("/PE (0,0)"), 0u);
  size_t kept = 0, expect = 0;
  for (const auto& [id, ss] : w.slices) {
    if (w.path(id).find("/PE (") == std::string::npos) continue;
    for (const PftraceSlice& s : ss) EXPECT_TRUE(s.end > from && s.start < to) << s.name << " " << s.start;
    kept += ss.size();
  }
  for (const auto& [id, ss] : a.slices) {
    const std::string p = a.path(id);
    for (const char* pe : {"/PE (1,1)", "/PE (2,1)", "/PE (1,2)", "/PE (2,2)"})
      if (p.find(pe) != std::string::npos)
        for (const PftraceSlice& s : ss) expect += s.end > from && s.start < to;
  }
  EXPECT_EQ(kept, expect);
  EXPECT_GT(kept, 0u);
  // A stream's slice that overlaps the window is kept whole too, as a PE's is (the egress stream,
  // [207, 227) here, was clipped to the window and kept its whole wavelet count: 50 in 10 cycles).
  test::RecordedGemv mid({6, 4}, 50, 40, 50, 1, "narrow_mid.wsad", {}, {TraceDetail::All, {}, 212, 222, {}, {}});
  const Decoded m(mid.trace_file);
  size_t streams = 0;
  for (const auto& [id, ss] : m.slices) {
    if (m.path(id).find("/PE (") != std::string::npos) continue;
    for (const PftraceSlice& s : ss) {
      bool whole = false;
      for (const auto& [aid, as] : a.slices)
        for (const PftraceSlice& f : as) whole = whole || (f.name == s.name && f.start == s.start && f.end == s.end);
      EXPECT_TRUE(whole) << s.name << " [" << s.start << ", " << s.end << ") is not a slice of the whole trace";
      streams += s.start < 212 && s.end > 222;
    }
  }
  EXPECT_EQ(streams, 1u);  // the egress stream, reaching out of the window on both sides
  for (const auto& [id, cs] : w.counters)
    for (const PftraceCounter& c : cs) EXPECT_LT(c.at, to);

  test::RecordedGemv tasks({6, 4}, 50, 40, 50, 1, "narrow_tasks.wsad", {}, {TraceDetail::Tasks, {}, 0, kNever, {}, {}});
  const Decoded t(tasks.trace_file);
  EXPECT_EQ(t.summary.counter_points, 0u);
  EXPECT_EQ(t.summary.slices, a.summary.slices);
  test::RecordedGemv counters({6, 4}, 50, 40, 50, 1, "narrow_counters.wsad", {}, {TraceDetail::Counters, {}, 0, kNever, {}, {}});
  const Decoded c(counters.trace_file);
  EXPECT_EQ(c.summary.slices, 2u);  // the two stream phases, no PE slices
  EXPECT_EQ(c.summary.counter_points, a.summary.counter_points);

  test::RecordedGemv one({6, 4}, 50, 40, 50, 1, "narrow_colour.wsad", {}, {TraceDetail::All, {}, 0, kNever, {1}, {}});
  const Decoded o(one.trace_file);
  std::set<std::string> colours;
  for (const auto& [id, tr] : o.tracks)
    if (tr.name.rfind("colour ", 0) == 0) colours.insert(tr.name);
  EXPECT_EQ(colours, std::set<std::string>{"colour 1"});
}

// A sender streams 40 wavelets east on colour 2 through (1,0) to (2,0), whose data task takes each.
struct Stream3 {
  static constexpr uint32_t n = 40;
  static void send(PeContext& ctx) { ctx.send(2, ctx.at<float>(0u), n); }
  Program sender;
  test::Recorder recorder;
  Wafer wafer{test::wse2(), {3, 1}};

  Stream3() {
    sender.name = "sender";
    sender.start_task = sender.local(send, "send");
    wafer.load({0, 0}, &sender);
    wafer.allocate({0, 0}, "values", 4 * n);
    recorder.install(wafer, {2, 0}, n);
    Mesh& m = wafer.mesh();
    m.set_route({0, 0}, 2, Route::make(Dir::Ramp, {Dir::East}));
    m.set_route({1, 0}, 2, Route::make(Dir::West, {Dir::East}));
    m.set_route({2, 0}, 2, Route::make(Dir::West, {Dir::Ramp}));
    wafer.finalize(1);
  }
};

TEST(TracePftrace, FlowFollowsAColoursRouteToTheReceivingTasks) {
  Stream3 s;
  ActivityRecorder rec(s.wafer, {"stream", "fwd"}, 30);
  const auto file = test::temp_file("flow.pftrace");
  PftraceWriter sink(file);
  LayerTrace trace(sink, rec, {TraceDetail::All, {0, 0, 3, 1}, 0, kNever, {}, {{2, {0, 0}}}});
  rec.trace_tasks({0, 0, 3, 1});
  rec.set_observer(&trace);
  s.wafer.run(100000, rec.hooks());
  rec.dump();
  trace.finish(rec);
  ASSERT_EQ(test::Recorder::received(s.wafer, {2, 0}).size(), Stream3::n);

  const Decoded d(file);
  // One track per router on the route, in order from the sender.
  const uint64_t h0 = d.find("Wavelet paths/c2 from PE (0,0)/hop 0: router (0,0)");
  const uint64_t h1 = d.find("Wavelet paths/c2 from PE (0,0)/hop 1: router (1,0)");
  const uint64_t h2 = d.find("Wavelet paths/c2 from PE (0,0)/hop 2: router (2,0)");
  ASSERT_TRUE(h0 && h1 && h2);
  uint64_t forwarded = 0;
  for (const PftraceSlice& sl : d.on(h1)) forwarded += sl.arg("wavelets")->number;
  EXPECT_EQ(forwarded, Stream3::n);
  // Every flow that starts at a slice ends at exactly one other slice, later or at the same time;
  // some end at the receiver's data tasks.
  std::map<uint64_t, std::vector<const PftraceSlice*>> starts, ends;
  for (const auto& [id, ss] : d.slices)
    for (const PftraceSlice& sl : ss) {
      for (uint64_t f : sl.flows_out) starts[f].push_back(&sl);
      for (uint64_t f : sl.flows_in) ends[f].push_back(&sl);
    }
  ASSERT_FALSE(starts.empty());
  size_t to_tasks = 0;
  for (const auto& [f, ss] : starts) {
    ASSERT_EQ(ss.size(), 1u);
    ASSERT_EQ(ends[f].size(), 1u) << "flow " << f << " has no end";
    EXPECT_LE(ss[0]->start, ends[f][0]->start);
    if (d.path(ends[f][0]->track).find("/PE (2,0)") != std::string::npos) {
      EXPECT_EQ(ends[f][0]->name, "record c2");
      ++to_tasks;
    }
  }
  EXPECT_GT(to_tasks, 0u);
  EXPECT_EQ(ends.size(), starts.size());

  // A PE that sends nothing on the colour is a usage error naming it.
  ActivityRecorder rec2(s.wafer, {"stream", "fwd"}, 30);
  PftraceWriter sink2(test::temp_file("flow2.pftrace"));
  try {
    LayerTrace bad(sink2, rec2, {TraceDetail::All, {0, 0, 3, 1}, 0, kNever, {}, {{2, {1, 0}}}});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("PE (1,0) sends nothing on colour 2"), std::string::npos) << e.what();
  }
}

// A counter's first point is written whatever its value, 0 included; after it only changes are.
// Found by a mutation test: taking a track with no point yet as holding 0 passed every test, and a
// GEMV trace's 71 counters that start at 0 lost their first point (Perfetto draws nothing until
// the first non-zero one, and one that stays 0 is an empty track).
TEST(TracePftrace, ACountersFirstPointIsWrittenEvenAtZero) {
  const auto file = test::temp_file("zero_first.pftrace");
  {
    PftraceWriter w(file);
    w.begin({"wse2", "gemv", "fwd", "4x2", 10, 0});
    const TrackId group = w.group(0, "PE (0,0)", 0);
    const TrackId idle = w.counter_track(group, "stalls", CounterUnit::Count, 0), busy = w.counter_track(group, "macs", CounterUnit::Count, 1);
    EXPECT_TRUE(w.counter(idle, 0, 0.0));
    EXPECT_FALSE(w.counter(idle, 10, 0.0));  // unchanged: the point at 0 holds
    EXPECT_TRUE(w.counter(busy, 0, 0.0));
    EXPECT_TRUE(w.counter(busy, 10, 7.0));
    EXPECT_TRUE(w.counter(busy, 20, 0.0));
    w.finish();
  }
  Decoded d(file);
  auto points = [&](const std::string& name) {
    std::vector<std::pair<Cycle, double>> out;
    for (const PftraceCounter& c : d.counters[d.find(name)]) out.push_back({c.at, c.value});
    return out;
  };
  EXPECT_EQ(points("stalls"), (std::vector<std::pair<Cycle, double>>{{0, 0.0}}));
  EXPECT_EQ(points("macs"), (std::vector<std::pair<Cycle, double>>{{0, 0.0}, {10, 7.0}, {20, 0.0}}));
  EXPECT_EQ(d.summary.counter_points, 4u);
}

// The JSON trace writes a counter's first point at 0 too, as the native one does: a counter that
// stays 0 (a PE's backpressure, its input queue) was a track with no point (18 of a GEMV trace's
// 77), found by a mutation test.
TEST(TracePftrace, AJsonCountersFirstPointIsWrittenEvenAtZero) {
  const auto file = test::scratch_file("zero_first.json");
  {
    JsonTraceWriter w(file);
    w.begin({"wse2", "gemv", "fwd", "4x2", 10, 0});
    const TrackId group = w.group(0, "PE (0,0)", 0);
    const TrackId idle = w.counter_track(group, "stalls", CounterUnit::Count, 0);
    EXPECT_TRUE(w.counter(idle, 0, 0.0));
    EXPECT_FALSE(w.counter(idle, 10, 0.0));
    w.finish();
  }
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  std::vector<nlohmann::json> points;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C") points.push_back(e);
  ASSERT_EQ(points.size(), 1u) << j.dump();
  EXPECT_EQ(points[0]["ts"], 0);
}

// `wse viz`'s timelines from a trace with more bars than its budget: the viewer says bars may be
// missing from the first cycle a dropped bar starts at (it said from where the dropped bar ended,
// claiming cycles it did not have, found by a mutation test). Two PEs, a bar each of [0, 5) and
// one of [5, 9) on the first: a budget of 2 drops the third, so bars may be missing from 5.
TEST(TracePftrace, TimelinesCutByTheirBudgetSayFromWhereBarsMayBeMissing) {
  const auto file = test::temp_file("budget.pftrace");
  const TraceInfo info{"wse2", "gemv", "fwd", "2x1", 10, 0};
  {
    PftraceWriter w(file);
    w.begin(info);
    const TrackId pe0 = w.slice_track(w.group(0, "PE (0,0)", 0), "PE (0,0)", 0);
    const TrackId pe1 = w.slice_track(w.group(0, "PE (1,0)", 1), "PE (1,0)", 0);
    w.slice(pe0, 0, 5, "receive_x", {}, {}, {});
    w.slice(pe1, 0, 5, "receive_x", {}, {}, {});
    w.slice(pe0, 5, 9, "multiply", {}, {}, {});
    w.finish();
  }
  const PeTimelines all = load_pe_timelines(file, 2, 1, 3, info.describe());
  EXPECT_FALSE(all.truncated);
  EXPECT_EQ(all.bars, 3u);
  const PeTimelines cut = load_pe_timelines(file, 2, 1, 2, info.describe());
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.bars, 2u);
  EXPECT_EQ(cut.complete_until, 5u);
  // A trace and a dump of other runs, with an escape byte in the trace's machine and the dump's
  // layer: the refusal shows both as \x1b (they reached the terminal raw: a review, forty-fifth round).
  const auto odd = test::temp_file("escape.pftrace");
  const TraceInfo escaped{"wse\x1b[2J", "gemv", "fwd", "2x1", 10, 0};
  {
    PftraceWriter w(odd);
    w.begin(escaped);
    w.slice(w.slice_track(w.group(0, "PE (0,0)", 0), "PE (0,0)", 0), 0, 5, "receive_x", {}, {}, {});
    w.finish();
  }
  const TraceInfo dump{"wse2", "fc\x1b-1", "fwd", "2x1", 10, 0};
  test::expect_error<UsageError>([&] { load_pe_timelines(odd, 2, 1, 3, dump.describe()); }, {"wse\\x1b[2J", "fc\\x1b-1"});
  try {
    load_pe_timelines(odd, 2, 1, 3, dump.describe());
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
  }
}

// A slice track at the top (the cluster trace's critical path) was an unnamed "Process 1" with
// an empty thread name in the JSON trace, where the native trace names it.
TEST(TracePftrace, AJsonTraceNamesATopLevelSliceTrack) {
  const std::filesystem::path file = test::scratch_file("top_level.json");
  {
    JsonTraceWriter w(file);
    w.begin({"wse2", "step 1", "cluster", "4x2", 0, 0, 2});
    const TrackId path = w.slice_track(0, "critical path (40 cycles)", 0);
    const TraceArg args[] = {{"cycles", 40, {}}};
    w.slice(path, 0, 40, "wafer 0: fc1 fwd", args, {}, {});
    w.finish();
  }
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  int named = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && (e["name"] == "process_name" || e["name"] == "thread_name")) {
      EXPECT_EQ(e["args"]["name"], "critical path (40 cycles)") << e;
      ++named;
    }
  EXPECT_EQ(named, 2);
  EXPECT_EQ(j["otherData"]["description"], "wse trace of step 1 across the cluster's actors: 2 wafer(s), each a 4x2 wse2 mesh, from wafer cycle 0");
}

// Found by a fuzzing campaign of large inputs: every slice begun copies its interned name, so one
// name of a megabyte begun thousands of times (a file of a megabyte) took gigabytes before the
// reader got to the trace's end. What open slices hold is bounded: 70 begins of a 1 MiB name.
TEST(TracePftrace, SlicesLeftOpenCannotHoldMoreThanTheReadersBound) {
  namespace pp = perfetto::protos;
  pp::Trace trace;
  pp::TracePacket* p = trace.add_packet();
  p->set_trusted_packet_sequence_id(1);
  p->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  p->mutable_trace_packet_defaults()->set_timestamp_clock_id(64);
  pp::ClockSnapshot* cs = p->mutable_clock_snapshot();
  pp::ClockSnapshot::Clock* boot = cs->add_clocks();
  boot->set_clock_id(pp::BUILTIN_CLOCK_BOOTTIME), boot->set_timestamp(0);
  pp::ClockSnapshot::Clock* inc = cs->add_clocks();
  inc->set_clock_id(64), inc->set_timestamp(0), inc->set_is_incremental(true);
  p = trace.add_packet();
  p->set_trusted_packet_sequence_id(1);
  p->mutable_track_descriptor()->set_uuid(1);
  p->mutable_track_descriptor()->set_name("x");
  for (int i = 0; i < 70; ++i) {
    p = trace.add_packet();
    p->set_trusted_packet_sequence_id(1);
    if (i == 0) {  // interned with the first event
      pp::EventName* name = p->mutable_interned_data()->add_event_names();
      name->set_iid(1), name->set_name(std::string(1u << 20, 'n'));
    }
    p->set_timestamp(1);
    p->mutable_track_event()->set_type(pp::TrackEvent::TYPE_SLICE_BEGIN);
    p->mutable_track_event()->set_track_uuid(1);
    p->mutable_track_event()->set_name_iid(1);
  }
  const auto file = test::temp_file("open_slices.pftrace");
  std::ofstream(file, std::ios::binary) << trace.SerializeAsString();
  ASSERT_LT(std::filesystem::file_size(file), 2u << 20);
  test::expect_error<UsageError>([&] { read_pftrace(file, {}); },
                                 {"trace " + file.string(), "slices begun and not yet ended hold more than 64 MiB"});
}

TEST(TracePftrace, ReaderRejectsCorruptTracesWithTheFileName) {
  test::RecordedGemv g({4, 3}, 30, 20, 25, 1, "corrupt_src.wsad");
  const std::string good = test::read_bytes(g.trace_file);
  ASSERT_GT(good.size(), 200u);
  const auto bad = test::temp_file("corrupt.pftrace");
  auto write = [&](const std::string& bytes) { std::ofstream(bad, std::ios::binary) << bytes; };
  size_t rejected = 0;
  for (const std::string& bytes : {std::string("not a trace"), good.substr(0, good.size() / 2), good.substr(0, 1), std::string()}) {
    write(bytes);
    try {
      read_pftrace(bad, {});
      EXPECT_TRUE(bytes.empty()) << "accepted a broken trace of " << bytes.size() << " bytes";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
      ++rejected;
    }
  }
  EXPECT_EQ(rejected, 3u);
  // Flipped bytes: an error or a (different) valid trace, never a crash.
  for (size_t i = 0; i < good.size(); i += 37) {
    std::string b = good;
    b[i] = char(b[i] ^ 0x5a);
    write(b);
    try {
      read_pftrace(bad, {});
    } catch (const UsageError&) {
    }
  }
}

// The cluster trace puts an actor's spans on as few lanes as keep a lane's slices apart: one that
// starts where the last ended goes on the same lane. Found by a mutation test: taking a span that
// abuts the last as overlapping gave a wafer's back-to-back passes a second track, "wafer 0 (2)".
TEST(ClusterTrace, SpansThatAbutShareALaneAndOnlyOverlapsGetAnother) {
  struct Recorder : TraceSink {
    std::map<TrackId, std::string> names;
    std::vector<std::pair<std::string, std::string>> slices;  // track's name, slice's
    TrackId next = 1;
    void begin(const TraceInfo&) override {}
    TrackId group(TrackId, std::string_view name, int) override { return names[next] = std::string(name), next++; }
    TrackId slice_track(TrackId, std::string_view name, int) override { return names[next] = std::string(name), next++; }
    TrackId counter_track(TrackId, std::string_view name, CounterUnit, int) override { return names[next] = std::string(name), next++; }
    void slice(TrackId track, Cycle, Cycle, std::string_view name, std::span<const TraceArg>, std::span<const uint64_t>,
               std::span<const uint64_t>) override {
      slices.push_back({names.at(track), std::string(name)});
    }
    bool counter(TrackId, Cycle, double) override { return true; }
    void finish() override {}
    uint64_t bytes_written() const override { return 0; }
  } sink;
  // wafer 0: three passes back to back; MemoryX: a stream overlapping an update.
  const nlohmann::json tl = {
      {"start", 100}, {"step", 4}, {"cycles", 60}, {"critical_path", nlohmann::json::array()},
      {"spans",
       {{"wafer 0", {{"fc1 fwd", 100, 110}, {"fc2 fwd", 110, 130}, {"fc2 bwd", 130, 160}}},
        {"MemoryX", {{"stream fc2 fwd", 100, 120}, {"update fc1", 105, 125}, {"stream fc2 bwd", 125, 140}}}}}};
  write_cluster_trace(sink, tl, "wse2", "4x2", 1);
  std::map<std::string, std::vector<std::string>> by_track;
  for (const auto& [track, slice] : sink.slices) by_track[track].push_back(slice);
  EXPECT_EQ(by_track["wafer 0"], (std::vector<std::string>{"fc1 fwd", "fc2 fwd", "fc2 bwd"}));
  EXPECT_EQ(by_track.count("wafer 0 (2)"), 0u);
  // The update overlaps the first stream: a second lane; the second stream starts where the first
  // lane's last slice ended (125 > 120): back on the first.
  EXPECT_EQ(by_track["MemoryX"], (std::vector<std::string>{"stream fc2 fwd", "stream fc2 bwd"}));
  EXPECT_EQ(by_track["MemoryX (2)"], (std::vector<std::string>{"update fc1"}));
}

}  // namespace
}  // namespace wse
