#include "tools/perfetto_export.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "core/errors.hpp"
#include "fabric/geometry.hpp"
#include "io/output_file.hpp"

namespace wse {

namespace {

constexpr int kPesPid = 1, kStreamsPid = 2, kFabricPid = 3;

nlohmann::json meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json counter(const std::string& name, int pid, uint64_t ts, nlohmann::json args) {
  return {{"name", name}, {"ph", "C"}, {"pid", pid}, {"tid", 0}, {"ts", ts}, {"args", std::move(args)}};
}

}  // namespace

nlohmann::json perfetto_trace(const DumpView& d, const std::vector<TracedPe>& pes, const std::vector<StreamPhase>& phases) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(meta("process_name", kPesPid, 0, "PEs (" + d.layer + " " + d.pass + ")"));
  ev.push_back(meta("process_name", kStreamsPid, 0, "Streams (MemoryX, host)"));
  ev.push_back(meta("process_name", kFabricPid, 0, "Fabric counters"));
  ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", kStreamsPid}, {"args", {{"sort_index", 0}}}});
  ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", kPesPid}, {"args", {{"sort_index", 1}}}});
  ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", kFabricPid}, {"args", {{"sort_index", 2}}}});

  // One track per traced PE thread (the main thread, then each microthread that ran an op), in
  // row-major order: task slices and DSD op slices.
  int next_tid = 1;
  for (size_t i = 0; i < pes.size(); ++i) {
    const TracedPe& pe = pes[i];
    std::map<uint8_t, int> tid_of;  // thread -> tid
    auto tid = [&](uint8_t thread) {
      auto it = tid_of.find(thread);
      if (it != tid_of.end()) return it->second;
      const int t = next_tid++;
      tid_of[thread] = t;
      const std::string name = "PE " + to_string(pe.coord) + (thread ? " ut" + std::to_string(thread - 1) : "");
      ev.push_back(meta("thread_name", kPesPid, t, name));
      ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPesPid}, {"tid", t}, {"args", {{"sort_index", t}}}});
      return t;
    };
    tid(0);
    for (const TaskCost& t : pe.tasks) {
      if (t.start < d.start_cycle) continue;
      const std::string task = t.local ? "local task " + std::to_string(t.colour) : "data task c" + std::to_string(t.colour);
      const bool op = t.op != nullptr;
      ev.push_back({{"name", op ? "@" + std::string(t.op) : task},
                    {"cat", op ? "dsd" : "task"},
                    {"ph", "X"},
                    {"pid", kPesPid},
                    {"tid", tid(t.thread)},
                    {"ts", t.start - d.start_cycle},
                    {"dur", t.end() - t.start},
                    {"args", op ? nlohmann::json{{"fmac", t.fmac}, {"move", t.move}, {"issued_by", task}}
                                : nlohmann::json{{"receive", t.receive}, {"fmac", t.fmac}, {"move", t.move}}}});
    }
    if (pe.truncated)
      ev.push_back({{"name", "task log truncated"}, {"ph", "i"}, {"s", "t"}, {"pid", kPesPid}, {"tid", tid(0)},
                    {"ts", pe.tasks.empty() ? 0 : pe.tasks.back().end() - d.start_cycle}});
  }

  std::vector<std::string> tracks;
  for (const StreamPhase& p : phases) {
    auto it = std::find(tracks.begin(), tracks.end(), p.track);
    if (it == tracks.end()) {
      tracks.push_back(p.track);
      ev.push_back(meta("thread_name", kStreamsPid, int(tracks.size()), p.track));
      it = tracks.end() - 1;
    }
    ev.push_back({{"name", p.name},
                  {"cat", "stream"},
                  {"ph", "X"},
                  {"pid", kStreamsPid},
                  {"tid", int(it - tracks.begin()) + 1},
                  {"ts", p.start},
                  {"dur", p.end - p.start},
                  {"args", {{"wavelets", p.wavelets}}}});
  }

  // Counter tracks, one point per interval (a counter holds its value until the next point).
  const MetricGrid* sram = d.pe_metric("sram_bytes");
  const MetricGrid* lw = d.link_metric("wavelets");
  const MetricGrid* lb = d.link_metric("backpressure_cycles");
  const size_t n = d.interval_starts.size();
  for (size_t k = 0; k < n; ++k) {
    const uint64_t ts = d.interval_starts[k];
    const double len = double(std::max<uint64_t>(1, d.interval_length(k)));
    if (sram) {
      uint64_t total = 0;
      for (uint32_t t : d.tiles) total += sram->frames[k][t];
      ev.push_back(counter("SRAM bytes in use (wafer)", kFabricPid, ts, {{"bytes", total}}));
      for (const TracedPe& pe : pes)
        ev.push_back(counter("SRAM bytes " + to_string(pe.coord), kPesPid, ts,
                             {{"bytes", sram->frames[k][size_t(pe.coord.y) * d.width + pe.coord.x]}}));
    }
    if (lw && lb) {
      double max_util = 0, sum_util = 0;
      uint64_t bp = 0, hops = 0;
      for (size_t l = 0; l < d.links.size(); ++l) {
        const double u = double(lw->frames[k][l]) / len;
        max_util = std::max(max_util, u);
        sum_util += u;
        bp += lb->frames[k][l];
      }
      for (size_t l = 0; l < d.links.size(); ++l) hops += d.links[l].kind == 0 ? lw->frames[k][l] : 0;
      ev.push_back(counter("link utilization", kFabricPid, ts,
                           {{"max", max_util}, {"mean", d.links.empty() ? 0.0 : sum_util / double(d.links.size())}}));
      ev.push_back(counter("link backpressure cycles", kFabricPid, ts, {{"cycles", bp}}));
      ev.push_back(counter("wavelet hops per cycle", kFabricPid, ts, {{"hops", double(hops) / len}}));
    }
    for (const SeriesView& s : d.series)
      ev.push_back(counter(s.name + " per cycle", kStreamsPid, ts, {{"wavelets", double(s.values[k]) / len}}));
  }

  nlohmann::json j;
  j["traceEvents"] = std::move(ev);
  j["displayTimeUnit"] = "ns";
  j["otherData"] = {{"machine", d.machine},        {"layer", d.layer},   {"pass", d.pass},
                    {"mesh", std::to_string(d.width) + "x" + std::to_string(d.height)},
                    {"interval_cycles", d.interval_cycles}, {"cycles", d.cycles}, {"start_cycle", d.start_cycle},
                    {"time_unit", "1 us in the viewer = 1 fabric cycle"}};
  return j;
}

void write_perfetto(const std::filesystem::path& file, const nlohmann::json& trace) {
  write_file_atomic(file, trace.dump() + "\n", "trace");
}

}  // namespace wse
