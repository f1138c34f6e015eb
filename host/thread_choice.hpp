#pragma once
// How many worker threads a run uses. `--threads N` is honoured as given (at most one worker per
// mesh row); without it the engine chooses: every hardware thread it can use, wafers side by side
// first, and per wafer only the workers its mesh pays for (fabric/partition.hpp,
// automatic_workers), so the default is never the slow case on a small mesh; a single-run kernel,
// once placed, only those its tiles in use pay for (fit_to_kernel), so neither is it on a large
// mesh the kernel uses a corner of. The choice and its reason go into the report. A training run
// then lets each pass pick between those workers and one by measurement (wafer/worker_tuner.hpp),
// since whether a second worker pays depends on the host as much as on the mesh.
#include <nlohmann/json.hpp>
#include <string>

#include "host/config.hpp"
#include "wafer/wafer.hpp"

namespace wse {

struct ThreadChoice {
  unsigned threads = 1;    // what to hand to the job (wafers side by side x workers per wafer)
  bool automatic = false;  // the user did not give --threads
  unsigned hardware = 1;   // hardware threads this process may run on (usable_hardware_threads)
  std::string note;        // why, when the engine used fewer than it could

  nlohmann::json to_json() const;
};

// The CPUs this process may run on (its affinity mask: `taskset`, a cpuset), at least 1.
unsigned usable_hardware_threads();

// `asked` = 0: the engine's choice.
ThreadChoice choose_threads(const RunConfig& cfg, unsigned asked);

// Once a single-run kernel is placed (its programs and routes are known, before the run): the
// engine's choice cut to the workers the tiles the kernel uses pay for, one per
// Partition::kTilesPerWorker of them, and the note says so. A chain along one row of a large
// mesh then runs on one worker, where two would spend the run at the barrier. A count the user
// gave is left as it is.
ThreadChoice fit_to_kernel(ThreadChoice c, const Wafer& wafer);

// The report's `threads_choice` once the run knows the workers it `used`: a count the user gave
// that the run could not use in full (a worker per mesh row or column of a wafer at most) gets a
// note saying so, as the engine's own choice does.
nlohmann::json threads_choice_json(const ThreadChoice& c, unsigned used);
// The same on a `threads_choice` already made (a training run's, made before the cluster is).
void note_capped_threads(nlohmann::json& choice, unsigned used);
// Why a run used fewer threads than asked, as the notes say it (a traced training pass's too).
inline constexpr const char* kThreadShareRule =
    "wafers share the threads evenly, each mesh taking at most one worker per row, or column; docs/performance.md";

}  // namespace wse
