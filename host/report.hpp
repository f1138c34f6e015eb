#pragma once
// report.json: what a run did, in numbers that are bit-identical for any thread count (except
// threads, host_seconds and pe_cycles_per_second, which describe the host, not the wafer).
#include <nlohmann/json.hpp>
#include <vector>

#include "host/config.hpp"
#include "wafer/wafer.hpp"

namespace wse {

struct FabricTotals {
  uint64_t macs = 0;
  uint64_t wavelets = 0;        // wavelets put into the fabric (edge ingress + PE sends)
  uint64_t wavelet_hops = 0;    // router-to-router link traversals
  uint64_t backpressure_cycles = 0;  // link cycles blocked by backpressure + PE send stalls
  double link_util_max = 0;     // busiest link's busy cycles / run cycles
  uint32_t sram_high_water_bytes = 0;
  uint64_t active_pes = 0;      // PEs with a program
  uint64_t fmac_cycles = 0;
  PeCounters pe;
};

FabricTotals totals(const Wafer& wafer, Cycle cycles);

// FNV-1a over the result and every wafer counter, in a fixed order.
uint64_t checksum(const Wafer& wafer, const WaferRun& run, const std::vector<float>& result);

// threads_detail.waiting: each worker's fraction of the run spent waiting at the barrier for
// the others (EngineResult::waiting), to three decimals.
nlohmann::json waiting_json(const std::vector<double>& waiting);

nlohmann::json make_report(const RunConfig& cfg, const Wafer& wafer, const WaferRun& run,
                           const std::vector<float>& result);

}  // namespace wse
