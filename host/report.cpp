#include "host/report.hpp"

#include <cmath>
#include <cstring>

#include "io/memory_limit.hpp"

namespace wse {

namespace {

struct Fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
};

}  // namespace

FabricTotals totals(const Wafer& wafer, Cycle cycles) {
  FabricTotals t;
  for (const Pe& pe : wafer.pes()) {
    t.pe += pe.counters;
    t.sram_high_water_bytes = std::max(t.sram_high_water_bytes, pe.sram.high_water());
    t.active_pes += pe.program != nullptr;
  }
  t.macs = t.pe.macs;
  t.fmac_cycles = t.pe.fmac_cycles;
  t.wavelets = t.pe.wavelets_out;
  for (const IngressPort& p : wafer.mesh().ingress_ports()) t.wavelets += p.sent();
  t.backpressure_cycles = t.pe.stall_send_cycles;
  for (const Link& l : wafer.mesh().links()) {
    if (l.kind == LinkKind::Hop) t.wavelet_hops += l.counters.wavelets;
    t.backpressure_cycles += l.counters.backpressure_cycles;
    if (cycles) t.link_util_max = std::max(t.link_util_max, double(wafer.busy_cycles(l)) / double(cycles));
  }
  return t;
}

uint64_t checksum(const Wafer& wafer, const WaferRun& run, const std::vector<float>& result) {
  Fnv f;
  f.u64(run.cycles);
  f.bytes(result.data(), result.size() * sizeof(float));
  for (const Pe& pe : wafer.pes()) {
    const PeCounters& c = pe.counters;
    for (uint64_t v : {c.receive_cycles, c.fmac_cycles, c.move_cycles, c.send_cycles, c.stall_send_cycles, c.setup_cycles, c.tasks,
                       c.wavelets_in, c.wavelets_out, c.macs, uint64_t(pe.sram.high_water())})
      f.u64(v);
  }
  for (const Link& l : wafer.mesh().links()) {
    f.u64(l.counters.wavelets);
    f.u64(l.counters.busy_cycles());
    f.u64(l.counters.backpressure_cycles);
  }
  for (const EgressPort& p : wafer.mesh().egress_ports())
    for (const EgressArrival& a : p.received()) f.u64(a.cycle);
  return f.h;
}

namespace {

// How the run was shared among its workers: the bands each stepped (first and end row, or column
// on a mesh cut into column bands) and the work the placed kernel put on each worker's bands
// (Wafer::work_estimate), which the bands were cut to share evenly. Host scheduling, not a
// property of the wafer: it depends on the thread count.
nlohmann::json partition_detail(const Wafer& wafer) {
  const Partition& p = wafer.partition();
  const bool rows = p.rows;
  nlohmann::json bands = nlohmann::json::array();
  for (const Block& b : p.blocks)
    bands.push_back({rows ? b.y0 : b.x0, rows ? b.y1 : b.x1, b.worker});
  std::vector<uint64_t> work(p.workers, 0);
  const std::vector<uint32_t> estimate = wafer.work_estimate();
  for (TileId t = 0; t < estimate.size(); ++t) work[p.owner[t]] += estimate[t];
  return {{"bands_of", rows ? "rows" : "columns"}, {"bands", bands}, {"work_per_worker", work}};
}

}  // namespace

nlohmann::json waiting_json(const std::vector<double>& waiting) {
  nlohmann::json w = nlohmann::json::array();
  for (double f : waiting) w.push_back(std::round(1e3 * f) / 1e3);
  return w;
}

nlohmann::json make_report(const RunConfig& cfg, const Wafer& wafer, const WaferRun& run,
                           const std::vector<float>& result) {
  const FabricTotals t = totals(wafer, run.cycles);
  const double pe_cycles = double(wafer.shape().tiles()) * double(run.cycles);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)checksum(wafer, run, result));
  nlohmann::json j;
  j["config"] = cfg.source.string();
  j["kernel"] = cfg.kernel;
  j["machine"] = cfg.machine.name;
  j["mesh"] = {{"width", wafer.shape().width}, {"height", wafer.shape().height}};
  j["threads"] = run.threads;
  j["threads_detail"] = partition_detail(wafer);
  // How much of the run each worker spent waiting at the barrier for the others: near zero, the
  // workers were busy; a half or more, fewer threads would do (docs/performance.md).
  if (!run.engine.waiting.empty()) j["threads_detail"]["waiting"] = waiting_json(run.engine.waiting);
  j["cycles"] = run.cycles;
  j["cycles_simulated"] = run.engine.cycles_stepped;
  j["hit_cycle_limit"] = run.engine.hit_cycle_limit;
  j["macs"] = t.macs;
  j["wavelets"] = t.wavelets;
  j["wavelet_hops"] = t.wavelet_hops;
  j["link_util_max"] = t.link_util_max;
  j["backpressure_cycles"] = t.backpressure_cycles;
  j["sram_high_water_bytes"] = t.sram_high_water_bytes;
  j["active_pes"] = t.active_pes;
  j["fmac_utilization"] = t.active_pes && run.cycles ? double(t.fmac_cycles) / (double(t.active_pes) * double(run.cycles)) : 0.0;
  j["pe_cycles"] = {{"receive", t.pe.receive_cycles}, {"fmac", t.pe.fmac_cycles}, {"move", t.pe.move_cycles},
                    {"send", t.pe.send_cycles}, {"stall_send", t.pe.stall_send_cycles},
                    {"setup", t.pe.setup_cycles}, {"tasks", t.pe.tasks}};
  j["host_seconds"] = run.host_seconds;
  j["pe_cycles_per_second"] = run.host_seconds > 0 ? pe_cycles / run.host_seconds : 0.0;
  // The Cerebras simulator's statistic: tiles x cycles / wall seconds of the run (every tile of
  // the mesh counts, busy or not), so the two can be set side by side.
  j["tile_cycles_per_second"] =
      run.host_seconds > 0 ? double(wafer.shape().width) * double(wafer.shape().height) * double(run.cycles) / run.host_seconds : 0.0;
  // The host memory the process has held so far: the run's, set beside the estimate it was
  // checked against before the build (docs/reliability.md, Memory before allocation).
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["checksum"] = hex;
  return j;
}

}  // namespace wse
