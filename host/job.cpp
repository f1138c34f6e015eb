#include "host/job.hpp"

#include <algorithm>

#include "host/report.hpp"

namespace wse {

JobResult run_job(const RunConfig& cfg, unsigned threads, ProgressFn progress) {
  ThreadChoice given;
  given.threads = threads;
  return run_job(cfg, given, std::move(progress));
}

namespace {

// The config's single-run kernel placed on `wafer` (run_job and place_job alike).
std::unique_ptr<PlacedKernel> place(const RunConfig& cfg, Wafer& wafer) {
  const KernelKind& kind = kernel_kind(cfg.kernel, "config " + cfg.source.string());
  if (kind.training || !cfg.kernel_config) throw std::logic_error("kernel " + cfg.kernel + " is not a single-run kernel");
  return kind.place(wafer, *cfg.kernel_config);
}

}  // namespace

uint32_t place_job(const RunConfig& cfg) {
  Wafer wafer(cfg.machine, cfg.mesh);
  const std::unique_ptr<PlacedKernel> kernel = place(cfg, wafer);
  wafer.finalize(1);
  uint32_t peak = 0;
  for (const Pe& pe : wafer.pes()) peak = std::max(peak, pe.sram.bytes_in_use());
  return peak;
}

UsageError cycle_limit_error(const RunConfig& cfg, const Wafer& wafer) {
  std::string busy;
  size_t total = 0;
  const std::vector<std::string> lines = wafer.stuck(6, &total);
  for (const std::string& s : lines) busy += "\n  " + s;
  if (total > lines.size()) busy += "\n  ... and " + std::to_string(total - lines.size()) + " more";
  const std::string what = cfg.max_cycles < kMaxRunCycles
                               ? "; raise run.max_cycles (at most 2^62) in " + cfg.source.string()
                               : " (2^62, its largest value) in " + cfg.source.string() +
                                     ": the kernel is likely waiting for wavelets that never come";
  return UsageError("run stopped at run.max_cycles = " + std::to_string(cfg.max_cycles) +
                    " before the kernel finished" + what + (busy.empty() ? "" : ". Still busy:" + busy));
}

JobResult run_job(const RunConfig& cfg, ThreadChoice& choice, ProgressFn progress, const std::function<void(unsigned)>& started) {
  Wafer wafer(cfg.machine, cfg.mesh);
  std::unique_ptr<PlacedKernel> kernel = place(cfg, wafer);
  choice = fit_to_kernel(choice, wafer);
  wafer.finalize(choice.threads);
  if (started) started(Partition::workers_for(cfg.mesh, choice.threads));
  WaferRun run = wafer.run(cfg.max_cycles, {std::move(progress)});
  if (run.engine.hit_cycle_limit) throw cycle_limit_error(cfg, wafer);
  JobResult out;
  out.result = kernel->finish();
  out.report = make_report(cfg, wafer, run, out.result);
  out.report[cfg.kernel] = kernel->report();
  return out;
}

}  // namespace wse
