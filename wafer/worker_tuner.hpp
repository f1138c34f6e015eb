#pragma once
// Which worker count a wafer's next run of a given kind uses, when the user left the count to the
// engine (no --threads).
//
// Whether a second worker pays depends on the host as much as on the mesh: every cycle ends at a
// barrier, and the tiles at a band edge read what the other worker's core wrote a cycle before.
// On a host whose cores see each other's writes in ~60 ns that costs a small part of a 16x16
// mesh's cycle; on one where it takes ~300 ns (the same VM, another hour: docs/performance.md)
// it costs more than the half cycle of work a second worker takes off. Results never depend on
// the count (the cycle engine's rule), so the choice can follow what is measured: a kind's first
// run uses the most workers, its second one, and from then on each run uses whichever of the two
// took fewer host seconds per simulated cycle at its last measurement, trying the other again
// every kRetry runs, since a shared host's speed drifts.
#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace wse {

class WorkerTuner {
 public:
  static constexpr uint32_t kRetry = 8;

  // `most`: the workers the engine chose for the wafer (the tuner picks between it and one).
  explicit WorkerTuner(unsigned most) : most_(most < 1 ? 1 : most) {}

  unsigned most() const { return most_; }

  // The workers the next run of `kind` should use.
  unsigned pick(const std::string& kind) const {
    if (most_ == 1) return 1;
    auto it = kinds_.find(kind);
    if (it == kinds_.end() || it->second.runs[1] == 0) return most_;
    const Kind& k = it->second;
    if (k.runs[0] == 0) return 1;
    const bool one_faster = k.last[0] < k.last[1];
    const bool retry = k.total % kRetry == kRetry - 1;  // measure the slower one again
    return one_faster != retry ? 1 : most_;
  }

  // What a run of `kind` on `workers` workers took (its host seconds over its simulated cycles).
  void record(const std::string& kind, unsigned workers, double host_seconds, uint64_t cycles) {
    if (cycles == 0) return;
    Kind& k = kinds_[kind];
    const size_t i = workers > 1 ? 1 : 0;
    k.last[i] = host_seconds / double(cycles);
    k.seconds[i] += host_seconds;
    k.cycles[i] += cycles;
    ++k.runs[i];
    ++k.total;
  }

  // Per kind, per choice ([0] = one worker, [1] = the most): for the report.
  struct Kind {
    std::array<double, 2> last{};     // host seconds per simulated cycle, last run
    std::array<double, 2> seconds{};  // summed over the runs
    std::array<uint64_t, 2> cycles{};
    std::array<uint32_t, 2> runs{};
    uint32_t total = 0;
  };
  const std::map<std::string, Kind>& kinds() const { return kinds_; }

 private:
  unsigned most_;
  std::map<std::string, Kind> kinds_;
};

}  // namespace wse
