// Engine throughput on a real kernel: PE-cycles per second of GEMV (kernels/gemv/gemv.hpp) on a P x P
// mesh, at 1 and 2 worker threads.
//
// PE-cycles/s = mesh PEs * modelled cycles (the run's length in wafer cycles, the stretches where
// nothing is due and the engine skips ahead included; the report's cycles_simulated counts the
// ones it stepped) / host seconds of the run: how fast the emulator advances the whole mesh,
// idle PEs included, which is what a user waiting for a layer feels.
// Matrix sizes give every PE a 32 x 32 tile (4 KiB of A, 32 fmacs of 32 elements), so PEs do
// real work and the row-wise partial-sum chain is long enough to dominate, as in the real kernel.
// The per-thread figure and the 1-vs-2-thread pair show how well the engine scales; `waiting`,
// at two threads, how much of the run the workers spent at the barrier waiting for each other.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "kernels/gemv/gemv.hpp"

namespace {

using namespace wse;

// Problems are large and deterministic: generate each size once per process, not per iteration.
const GemvProblem& problem(uint32_t n) {
  static std::map<uint32_t, GemvProblem> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, GemvProblem::random(n, n, 42)).first;
  return it->second;
}

// Args: mesh side P, matrix side N, worker threads.
void BM_Gemv(benchmark::State& state) {
  const auto side = uint32_t(state.range(0));
  const auto n = uint32_t(state.range(1));
  const auto threads = unsigned(state.range(2));
  const GemvProblem& prob = problem(n);
  const double pes = double(side) * side;
  double seconds = 0, waiting = 0;
  Cycle cycles = 0;
  // Manual time = the engine's wall time of the run only: a run consumes its ingress streams, so
  // every iteration builds a fresh wafer, and that set-up is left out of the measurement.
  for (auto _ : state) {
    Wafer wafer(MachineSpec{}, MeshShape{side, side});
    GemvKernel kernel(wafer, prob);
    wafer.finalize(threads);
    WaferRun run = wafer.run(Cycle{1} << 40);
    state.SetIterationTime(run.host_seconds);
    if (run.engine.hit_cycle_limit || kernel.result().size() != n) {
      state.SkipWithError("GEMV run did not complete");
      break;
    }
    seconds += run.host_seconds;
    cycles = run.cycles;
    waiting += run.engine.mean_waiting();
  }
  // Computed from the runs' wall time, not with kIsRate (which divides by main-thread CPU time).
  const double rate = seconds > 0 ? pes * double(cycles) * double(state.iterations()) / seconds : 0;
  state.counters["cycles"] = double(cycles);
  state.counters["pe_cycles_per_second"] = rate;
  state.counters["pe_cycles_per_second_per_thread"] = rate / threads;
  // The workers' mean fraction of a run spent at the barrier waiting for each other.
  if (threads > 1 && state.iterations() > 0) state.counters["waiting"] = waiting / double(state.iterations());
}

BENCHMARK(BM_Gemv)
    ->ArgNames({"P", "N", "threads"})
    ->Args({64, 2048, 1})
    ->Args({64, 2048, 2})
    ->Args({256, 4096, 1})
    ->Args({256, 4096, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
