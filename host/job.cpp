#include "host/job.hpp"

#include "host/gemv.hpp"
#include "host/report.hpp"

namespace wse {

JobResult run_job(const RunConfig& cfg, unsigned threads, ProgressFn progress) {
  Wafer wafer(cfg.machine, cfg.mesh);
  GemvProblem problem = GemvProblem::random(cfg.gemv.rows, cfg.gemv.cols, cfg.gemv.seed);
  GemvKernel kernel(wafer, problem, cfg.gemv.grid_width, cfg.gemv.grid_height);
  wafer.finalize(threads);
  WaferRun run = wafer.run(cfg.max_cycles, {std::move(progress)});
  if (run.engine.hit_cycle_limit)
    throw UsageError("run stopped at run.max_cycles = " + std::to_string(cfg.max_cycles) +
                     " before the kernel finished; raise run.max_cycles in " + cfg.source.string());
  JobResult out;
  out.result = kernel.result();
  out.report = make_report(cfg, wafer, run, out.result);
  out.report["gemv"] = {{"rows", cfg.gemv.rows},
                        {"cols", cfg.gemv.cols},
                        {"grid", {{"width", kernel.grid_width()}, {"height", kernel.grid_height()}}}};
  return out;
}

}  // namespace wse
