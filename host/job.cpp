#include "host/job.hpp"

#include <cmath>

#include "host/gemv.hpp"
#include "host/reduce.hpp"
#include "host/report.hpp"

namespace wse {

namespace {

void check_limit(const RunConfig& cfg, const Wafer& wafer, const WaferRun& run) {
  if (run.engine.hit_cycle_limit) {
    std::string busy;
    for (const std::string& s : wafer.stuck(6)) busy += "\n  " + s;
    throw UsageError("run stopped at run.max_cycles = " + std::to_string(cfg.max_cycles) +
                     " before the kernel finished; raise run.max_cycles in " + cfg.source.string() +
                     (busy.empty() ? "" : ". Still busy:" + busy));
  }
}

JobResult run_gemv(const RunConfig& cfg, unsigned threads, ProgressFn progress) {
  Wafer wafer(cfg.machine, cfg.mesh);
  GemvProblem problem = GemvProblem::random(cfg.gemv.rows, cfg.gemv.cols, cfg.gemv.seed);
  GemvKernel kernel(wafer, problem, cfg.gemv.grid_width, cfg.gemv.grid_height);
  wafer.finalize(threads);
  WaferRun run = wafer.run(cfg.max_cycles, {std::move(progress)});
  check_limit(cfg, wafer, run);
  JobResult out;
  out.result = kernel.result();
  out.report = make_report(cfg, wafer, run, out.result);
  out.report["gemv"] = {{"rows", cfg.gemv.rows},
                        {"cols", cfg.gemv.cols},
                        {"grid", {{"width", kernel.grid_width()}, {"height", kernel.grid_height()}}}};
  return out;
}

JobResult run_reduce(const RunConfig& cfg, unsigned threads, ProgressFn progress) {
  Wafer wafer(cfg.machine, cfg.mesh);
  ReduceKernel kernel(wafer, {cfg.reduce.algorithm, cfg.reduce.elements, cfg.reduce.seed});
  wafer.finalize(threads);
  WaferRun run = wafer.run(cfg.max_cycles, {std::move(progress)});
  check_limit(cfg, wafer, run);
  if (!kernel.finished())
    throw std::logic_error("reduce: the run ended before PE (0,0) finished its last operation (the fabric went quiet: a deadlock)");
  JobResult out;
  out.result = kernel.result();
  // Checked against the host: the same sums in the same order (bit for bit), and the exact sums.
  const std::vector<float> same = kernel.host_sum();
  const std::vector<double> exact = kernel.exact_sum();
  uint64_t mismatches = 0;
  double max_err = 0;
  for (size_t i = 0; i < out.result.size(); ++i) {
    mismatches += std::bit_cast<uint32_t>(out.result[i]) != std::bit_cast<uint32_t>(same[i]);
    max_err = std::max(max_err, std::abs(double(out.result[i]) - exact[i]));
  }
  if (mismatches)
    throw std::logic_error("reduce: " + std::to_string(mismatches) + " of " + std::to_string(out.result.size()) +
                           " sums differ from the host's sums in the same order");
  out.report = make_report(cfg, wafer, run, out.result);
  out.report["reduce"] = {{"algorithm", cfg.reduce.algorithm},
                          {"elements", cfg.reduce.elements},
                          {"width", kernel.width()},
                          {"reduce_cycles", kernel.reduce_cycles()},
                          {"switch_advances", kernel.switch_advances()},
                          {"matches_host_sum", true},
                          {"max_abs_error_vs_exact", max_err}};
  return out;
}

}  // namespace

JobResult run_job(const RunConfig& cfg, unsigned threads, ProgressFn progress) {
  if (cfg.kernel == "reduce") return run_reduce(cfg, threads, std::move(progress));
  return run_gemv(cfg, threads, std::move(progress));
}

}  // namespace wse
