#pragma once
// One `wse run`: build the wafer for a config, compile the kernel onto it, run, report.
#include <nlohmann/json.hpp>

#include <functional>
#include <vector>

#include "fabric/cycle_engine.hpp"
#include "host/config.hpp"
#include "host/thread_choice.hpp"
#include "wafer/wafer.hpp"

namespace wse {

struct JobResult {
  nlohmann::json report;
  std::vector<float> result;
};

JobResult run_job(const RunConfig& cfg, unsigned threads, ProgressFn progress = {});
// What `run --validate_only` checks of a single-run kernel: its wafer built, the kernel placed on
// it (SRAM, colours, queues) and the mesh finalized, as run_job does before it runs; runs nothing.
// Returns the highest SRAM bytes in use on any PE once placed.
uint32_t place_job(const RunConfig& cfg);

// The same with the engine's choice of workers (host/thread_choice.hpp): once the kernel is
// placed, `choice` is fitted to the tiles it uses (fit_to_kernel) and `started(workers)` is
// called before the run.
// The error for a kernel still busy at run.max_cycles, naming what is still busy (`wafer.stuck`).
// Below kMaxRunCycles it says to raise the field; at the bound, that the kernel is likely stuck.
UsageError cycle_limit_error(const RunConfig& cfg, const Wafer& wafer);

JobResult run_job(const RunConfig& cfg, ThreadChoice& choice, ProgressFn progress = {},
                  const std::function<void(unsigned workers)>& started = {});

}  // namespace wse
