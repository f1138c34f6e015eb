// Host memory of a full-wafer set-up: a 750 x 994 wafer with the GEMV kernel placed on every PE
// and finalized for 2 workers, not run. This is the floor every full-wafer job pays before the
// first cycle; the target is under 4 GiB. It is its own executable because peak RSS is per
// process: in a binary shared with other benchmarks it would report their peak, not this one's.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>

#include "kernels/gemv/gemv.hpp"

namespace {

using namespace wse;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A field of /proc/self/status in GiB (VmRSS: now, VmHWM: peak), or -1 if absent.
double status_gib(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double kib = -1;
  const size_t len = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') kib = std::strtod(line + len + 1, nullptr);
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024.0 / kGiB;
}

// The mesh alone, before any SRAM is written: the GEMV routing pattern (x multicast down every
// column, partial sums east along every row, ports on the north and east edges) on all 750 x 994
// tiles, finalized for 2 workers. Registered first so its resident set is not inflated by the
// full set-up below (peak RSS is per process).
void BM_FullWaferMeshOnly(benchmark::State& state) {
  const MachineSpec spec;
  double rss = 0;
  for (auto _ : state) {
    Wafer wafer(spec, MeshShape{spec.fabric_width, spec.fabric_height});
    Mesh& m = wafer.mesh();
    const uint32_t w = spec.fabric_width, h = spec.fabric_height;
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        m.set_route({x, y}, 0, Route::make(Dir::North, {Dir::Ramp, Dir::South}));
        m.set_route({x, y}, 1, Route::make(Dir::West, {Dir::East}));
      }
      m.add_egress({w - 1, y}, Dir::East);
    }
    for (uint32_t x = 0; x < w; ++x) m.add_egress({x, h - 1}, Dir::South), m.add_ingress({x, 0}, Dir::North);
    for (uint32_t y = 0; y < h; ++y) m.add_ingress({0, y}, Dir::West);
    static const Program sink = [] {
      Program p;
      p.name = "sink";
      p.on(0, [](PeContext&, Wavelet) {});
      return p;
    }();
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x) wafer.load({x, y}, &sink);
    wafer.finalize(2);
    rss = status_gib("VmRSS");
  }
  state.counters["rss_mesh_finalized_GiB"] = rss;
  state.SetLabel(rss < 4.0 ? "mesh set-up < 4 GiB target: ok" : "mesh set-up >= 4 GiB target: OVER");
}
BENCHMARK(BM_FullWaferMeshOnly)->Iterations(1)->Unit(benchmark::kSecond);

// Args: matrix side N (must fit SRAM: 3000 gives every PE a ~4 x 4 tile).
void BM_FullWaferSetup(benchmark::State& state) {
  const auto n = uint32_t(state.range(0));
  const MachineSpec spec;  // wse2: 750 x 994
  double after_problem = 0, after_wafer = 0, after_kernel = 0, after_finalize = 0;
  for (auto _ : state) {
    GemvProblem prob = GemvProblem::random(n, n, 42);
    after_problem = status_gib("VmRSS");
    Wafer wafer(spec, MeshShape{spec.fabric_width, spec.fabric_height});
    after_wafer = status_gib("VmRSS");
    GemvKernel kernel(wafer, prob);
    if (kernel.grid_width() != spec.fabric_width || kernel.grid_height() != spec.fabric_height) {
      state.SkipWithError("GEMV does not cover the whole wafer");
      break;
    }
    after_kernel = status_gib("VmRSS");
    wafer.finalize(2);
    after_finalize = status_gib("VmRSS");
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double peak = double(ru.ru_maxrss) * 1024.0 / kGiB;  // ru_maxrss is in KiB on Linux
  // Where the memory goes, as resident set after each stage (GiB).
  state.counters["rss_problem_GiB"] = after_problem;
  state.counters["rss_wafer_GiB"] = after_wafer;
  state.counters["rss_kernel_GiB"] = after_kernel;
  state.counters["rss_finalize_GiB"] = after_finalize;
  state.counters["peak_rss_GiB"] = peak;
  state.SetLabel(peak < 4.0 ? "peak < 4 GiB target: ok" : "peak >= 4 GiB target: OVER");
}

// One iteration: a second would only re-measure the same peak.
BENCHMARK(BM_FullWaferSetup)->ArgName("N")->Arg(3000)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
