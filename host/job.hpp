#pragma once
// One `wse run`: build the wafer for a config, compile the kernel onto it, run, report.
#include <nlohmann/json.hpp>
#include <vector>

#include "fabric/cycle_engine.hpp"
#include "host/config.hpp"

namespace wse {

struct JobResult {
  nlohmann::json report;
  std::vector<float> result;
};

JobResult run_job(const RunConfig& cfg, unsigned threads, ProgressFn progress = {});

}  // namespace wse
