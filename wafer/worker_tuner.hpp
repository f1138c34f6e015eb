#pragma once
// Which worker count a wafer's next run of a given kind uses, when the user left the count to the
// engine (no --threads).
//
// Whether a second worker pays depends on the host as much as on the mesh: every cycle ends at a
// barrier, and the tiles at a band edge read what the other worker's core wrote a cycle before.
// On a host whose cores see each other's writes in ~60 ns that costs a small part of a 16x16
// mesh's cycle; on one where it takes ~300 ns (the same VM, another hour:
// docs/performance-history.md, ninth round) it costs more than the half cycle of work a second
// worker takes off. Results never depend on the count (the cycle engine's rule), so the choice
// can follow what is measured: a kind's first run uses the most workers, its second one, and
// from then on each run uses whichever of the two took fewer host seconds per simulated cycle at
// its last measurement, trying the other again after kRetry runs, since a shared host's speed
// drifts. Each retry that finds the other still slower doubles the wait before the next one (up
// to kMaxRetry runs): a retry is a run on the slower count, and at a fixed one run in 8 a long
// training run spent an eighth of its passes there (7.5% more time than on the faster alone when
// two workers are 1.6x one). Once the choice changes (a retry finds the other faster, or a run
// finds its own count slower than the other's last), the wait starts again from kRetry.
//
// A kind's first run on one worker is itself a run on the slower count, most often: on a short
// run (a 3-step cut of the FC example has each pass three times) it is a third of the passes,
// and the default came out 0.2-0.7 s a step slower than --threads 2 (docs/performance-history.md,
// twenty-third round). So a kind whose run on one worker is still to come puts it off when at
// least kMinKinds kinds have been measured on both and every one of them found the most workers
// clearly faster (one worker at least kClear times as slow, a cycle): the host has said which it
// favours, and the kind measures one worker at its first retry instead (after kRetry runs on the
// most), or at once when a kind measured later finds otherwise. (Two kinds, not one: the FC
// step's first kind, the input of a batch, measured 1.15-3.4x between runs on this host, where
// its passes measured 1.1-1.3x.)
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace wse {

class WorkerTuner {
 public:
  static constexpr uint32_t kRetry = 8;      // runs on the faster count before the first retry
  static constexpr uint32_t kMaxRetry = 64;  // the longest wait between retries
  // How much slower one worker must have been, in every kind measured on both (at least kMinKinds
  // of them), for a kind still to measure one worker to put that off: a margin, so that a close
  // call is not taken for the host's verdict (two workers were 1.1-1.9x one on the FC example's
  // passes on this 2-core host, from hour to hour).
  static constexpr double kClear = 1.2;
  static constexpr uint32_t kMinKinds = 2;

  // `most`: the workers the engine chose for the wafer (the tuner picks between it and one).
  explicit WorkerTuner(unsigned most) : most_(most < 1 ? 1 : most) {}

  unsigned most() const { return most_; }

  // The workers the next run of `kind` should use.
  unsigned pick(const std::string& kind) const {
    if (most_ == 1) return 1;
    auto it = kinds_.find(kind);
    if (it == kinds_.end() || it->second.runs[1] == 0) return most_;
    const Kind& k = it->second;
    if (k.runs[0] == 0) return k.runs[1] <= kRetry && most_clearly_faster() ? most_ : 1;
    const bool retry = k.since >= k.wait;  // measure the slower one again
    return k.one_faster() != retry ? 1 : most_;
  }

  // What a run of `kind` on `workers` workers took: its host seconds over its cycles (the run's
  // modelled length, as its report counts them, idle stretches the engine skipped included). The
  // choice reads the last run of each count (`last`); the report's host_us_per_kcycle, the mean.
  void record(const std::string& kind, unsigned workers, double host_seconds, uint64_t cycles) {
    if (cycles == 0) return;
    Kind& k = kinds_[kind];
    const size_t i = workers > 1 ? 1 : 0;
    // Once both counts have been measured, a run on the one that was the slower before it is a
    // retry. (The second of the two first runs starts the waiting, as a change of choice does.)
    const bool both = k.runs[0] && k.runs[1];
    const bool one_was_faster = k.one_faster();
    const bool on_slower = both && (i == 0) != one_was_faster;
    k.last[i] = host_seconds / double(cycles);
    k.seconds[i] += host_seconds;
    k.cycles[i] += cycles;
    ++k.runs[i];
    const bool changed = k.one_faster() != one_was_faster;
    if (!both || changed) {
      k.since = 0, k.wait = kRetry;
    } else if (on_slower) {  // a retry that found the other faster still
      k.since = 0, k.wait = std::min(k.wait * 2, kMaxRetry);
    } else {
      ++k.since;
    }
  }

  // Per kind, per choice ([0] = one worker, [1] = the most): for the report.
  struct Kind {
    std::array<double, 2> last{};     // host seconds per simulated cycle, last run
    std::array<double, 2> seconds{};  // summed over the runs
    std::array<uint64_t, 2> cycles{};
    std::array<uint32_t, 2> runs{};
    uint32_t since = 0;      // runs on the faster count since the last on the slower
    uint32_t wait = kRetry;  // runs on the faster count before the next retry
    bool one_faster() const { return last[0] < last[1]; }
    uint32_t total() const { return runs[0] + runs[1]; }
  };
  const std::map<std::string, Kind>& kinds() const { return kinds_; }

  // At least kMinKinds kinds have been measured on both counts, and every such kind found one
  // worker at least kClear times as slow as the most, a cycle, at its last measurement of each.
  bool most_clearly_faster() const {
    uint32_t measured = 0;
    for (const auto& [name, k] : kinds_) {
      if (!k.runs[0] || !k.runs[1]) continue;
      if (!(k.last[0] >= kClear * k.last[1])) return false;
      ++measured;
    }
    return measured >= kMinKinds;
  }

 private:
  unsigned most_;
  std::map<std::string, Kind> kinds_;
};

}  // namespace wse
