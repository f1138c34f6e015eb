// Router throughput: wavelet hops per second through one saturated row of routers, through a
// mesh whose every column is saturated, which on two workers measures what a band edge costs, and
// through a mesh of which a kernel uses only some rows (what worker bands that follow the work
// give).
//
// A W x 1 mesh with an ingress port on the west edge of (0,0) and an egress port on the east edge
// of (W-1,0); every router routes colour 0 from West to East. With io_bytes_per_cycle = 0 the
// ingress runs at link rate, so every link carries one wavelet per cycle and every router is
// stepped every cycle: the run measures the router's ingest/forward path and the cycle engine,
// with no PE involved. Each wavelet makes W hops (W-1 router-to-router links plus the egress
// link), so the last of K arrives at exactly (K-1) + W * hop_latency; the benchmark checks that
// and the count, so it can never report the speed of a broken run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "bare_loop.hpp"
#include "lean_row.hpp"
#include "wafer/wafer.hpp"

namespace {

using namespace wse;

constexpr Colour kColour = 0;

// A finalized row, ready to run: a run consumes the ingress stream, so each iteration needs one.
// West to east, or (`westward`) east to west: tiles are numbered west to east, so a westward hop's
// dst is stepped before its src in every cycle, and its credits cannot go straight into src's
// lane as an eastward hop's do (Lane::kLateBack).
std::unique_ptr<Wafer> make_row(uint32_t width, uint64_t wavelets, unsigned threads, bool westward = false) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 0;  // the port at link rate: the row, not off-wafer I/O, is the limit
  auto wafer = std::make_unique<Wafer>(spec, MeshShape{width, 1});
  Mesh& mesh = wafer->mesh();
  const Dir from = westward ? Dir::East : Dir::West, to = opposite(from);
  for (uint32_t x = 0; x < width; ++x) mesh.set_route({x, 0}, kColour, Route::make(from, {to}));
  IngressPort& in = mesh.add_ingress({westward ? width - 1 : 0, 0}, from);
  for (uint64_t k = 0; k < wavelets; ++k) in.enqueue(Wavelet{uint32_t(k), kColour});
  mesh.add_egress({westward ? 0 : width - 1, 0}, to).reserve(wavelets);
  wafer->finalize(threads);
  return wafer;
}

// Empty when the run delivered every wavelet, in order, with the closed-form timing.
std::string check_row(const Wafer& wafer, uint64_t wavelets) {
  const auto& got = wafer.mesh().egress_ports().front().received();
  if (got.size() != wavelets)
    return "egress received " + std::to_string(got.size()) + " of " + std::to_string(wavelets) + " wavelets";
  for (uint64_t k = 0; k < wavelets; ++k)
    if (got[k].wavelet.payload != uint32_t(k)) return "wavelet " + std::to_string(k) + " arrived out of order";
  const Cycle expected = (wavelets - 1) + Cycle(wafer.shape().width) * wafer.spec().hop_latency_cycles;
  if (got.back().cycle != expected)
    return "last wavelet arrived at cycle " + std::to_string(got.back().cycle) + ", expected " + std::to_string(expected);
  return {};
}

// What the runs of one benchmark took: their summed engine wall time, how many completed, and the
// cycles of one (every run of a benchmark is the same run).
struct Runs {
  double seconds = 0;
  uint64_t done = 0;
  Cycle cycles = 0;
  double waiting = 0;  // the workers' mean fraction of a run spent at the barrier, over the runs
};

// With more than one worker: how much of the runs the workers spent waiting at the barrier for
// each other (EngineResult::waiting), the share of a second thread that bought nothing.
void count_waiting(benchmark::State& state, const Runs& r, unsigned threads) {
  if (threads > 1 && r.done) state.counters["waiting"] = r.waiting / double(r.done);
}

// Runs `make()`'s wafer once per iteration and checks it with `check(wafer)` (empty: correct).
// Manual time = the engine's own wall time of the run, so building, checking and tearing down
// each iteration's wafer is not measured. `before()` runs at the start of each iteration,
// outside the measured time (the saturated row measures its ceiling there).
template <class Make, class Check, class Before = void (*)()>
Runs run_each_iteration(benchmark::State& state, Make&& make, Check&& check, Before&& before = [] {}) {
  Runs r;
  for (auto _ : state) {
    before();
    auto wafer = make();
    WaferRun run = wafer->run(Cycle{1} << 40);
    state.SetIterationTime(run.host_seconds);
    if (std::string err = check(*wafer); !err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    r.seconds += run.host_seconds;
    ++r.done;
    r.cycles = run.cycles;
    r.waiting += run.engine.mean_waiting();
  }
  return r;
}

// Args: row width W, wavelets K, worker threads. (`westward`: BM_SaturatedRowWest.)
void saturated_row(benchmark::State& state, bool westward) {
  const auto width = uint32_t(state.range(0));
  const auto wavelets = uint64_t(state.range(1));
  const auto threads = unsigned(state.range(2));
  // The bare two-phase loop over the same row (bare_loop.hpp), measured for 0.1 s before each
  // run, so that the ceiling and the row share the host's minutes: on this shared host both move
  // by a third within a minute, and a ceiling measured once per process made `of_ceiling` move
  // as much (0.066 to 0.099 for one binary in two runs of bench.sh).
  // The lean row (lean_row.hpp), the same run with the rules and nothing else, is measured
  // there too: `of_lean` is the engine's rate over it, what the engine's generality costs.
  double ceiling_sum = 0, lean_sum = 0;
  uint64_t ceilings = 0;
  const Runs r = run_each_iteration(
      state, [&] { return make_row(width, wavelets, threads, westward); }, [&](const Wafer& w) { return check_row(w, wavelets); },
      [&] {
        ceiling_sum += bench::bare_loop_tile_cycles_per_second(width, 1, 0.1), ++ceilings;
        lean_sum += bench::lean_row_hops_per_second(width, wavelets, 0.1);
      });
  const double seconds = r.seconds, hops = double(wavelets) * width * double(r.done);
  const Cycle cycles = r.cycles;
  // Rates are computed here from the run's wall time: Google Benchmark's kIsRate divides by the
  // main thread's CPU time, which misses the worker threads of a multi-threaded run.
  state.counters["wavelet_hops/s"] = seconds > 0 ? hops / seconds : 0;
  state.counters["cycles"] = double(cycles);
  state.counters["cycles/s"] = seconds > 0 ? double(cycles) * double(state.iterations()) / seconds : 0;
  count_waiting(state, r, threads);
  // Against the ceiling, on one thread: what a second worker buys shows as a ratio above the
  // one-thread row's. `of_ceiling` is hops per second over the ceiling's tile-cycles per second,
  // as BM_LeanRow's: the "hop throughput at least 1/5 of the ceiling". (It was the row's
  // tile-cycles over the ceiling until 2026-11-29, 2.6% more at 512 routers: the tile-cycles count
  // the row's fill, 20,512 cycles for 20,000 wavelets, as if each were a hop.)
  state.counters["tile_cycles/s"] = seconds > 0 ? double(width) * double(cycles) * double(state.iterations()) / seconds : 0;
  const double ceiling = ceilings ? ceiling_sum / double(ceilings) : 0;
  state.counters["ceiling_tile_cycles/s"] = ceiling;
  state.counters["of_ceiling"] = ceiling > 0 ? state.counters["wavelet_hops/s"] / ceiling : 0;
  const double lean = ceilings ? lean_sum / double(ceilings) : 0;
  state.counters["of_lean"] = lean > 0 ? state.counters["wavelet_hops/s"] / lean : 0;
}

void BM_SaturatedRow(benchmark::State& state) { saturated_row(state, false); }
// The same row run east to west: the same cycles, a hop whose credits come back later in the
// cycle order (Lane::kLateBack).
void BM_SaturatedRowWest(benchmark::State& state) { saturated_row(state, true); }

// The lean row on its own (lean_row.hpp): the saturated row's rules without the engine, against
// the bare-loop ceiling measured before each run, as BM_SaturatedRow is. What the rules alone
// reach of the ceiling on this host, on one thread.
void BM_LeanRow(benchmark::State& state) {
  const auto width = uint32_t(state.range(0));
  const auto wavelets = uint64_t(state.range(1));
  double ceiling_sum = 0, seconds = 0;
  uint64_t runs = 0;
  for (auto _ : state) {
    ceiling_sum += bench::bare_loop_tile_cycles_per_second(width, 1, 0.1);
    bench::LeanRow row(width, wavelets);
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t cycles = row.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    if (std::string err = row.check(); !err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    seconds += s, ++runs;
    state.counters["cycles"] = double(cycles);
  }
  const double hops = double(wavelets) * width * double(runs);
  state.counters["wavelet_hops/s"] = seconds > 0 ? hops / seconds : 0;
  const double ceiling = runs ? ceiling_sum / double(runs) : 0;
  state.counters["ceiling_tile_cycles/s"] = ceiling;
  state.counters["of_ceiling"] = ceiling > 0 && seconds > 0 ? hops / seconds / ceiling : 0;
}

// A band edge under load: a W x H mesh whose every column carries colour 0 from an ingress port on
// the north edge to an egress port on the south edge, each at link rate, as a layer's weights
// stream down every column. On two workers the mesh is cut into row bands, so W links cross the
// band edge southward, each with a wavelet every cycle, and W credit links northward: what a
// worker pays per cycle for another worker's core is measured here, beside the one-worker run.
std::unique_ptr<Wafer> make_columns(uint32_t width, uint32_t height, uint64_t wavelets, unsigned threads) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 0;
  auto wafer = std::make_unique<Wafer>(spec, MeshShape{width, height});
  Mesh& mesh = wafer->mesh();
  for (uint32_t x = 0; x < width; ++x) {
    for (uint32_t y = 0; y < height; ++y) mesh.set_route({x, y}, kColour, Route::make(Dir::North, {Dir::South}));
    IngressPort& in = mesh.add_ingress({x, 0}, Dir::North);
    for (uint64_t k = 0; k < wavelets; ++k) in.enqueue(Wavelet{uint32_t(k), kColour});
    mesh.add_egress({x, height - 1}, Dir::South).reserve(wavelets);
  }
  wafer->finalize(threads);
  return wafer;
}

std::string check_columns(const Wafer& wafer, uint64_t wavelets) {
  const Cycle expected = (wavelets - 1) + Cycle(wafer.shape().height) * wafer.spec().hop_latency_cycles;
  for (const EgressPort& p : wafer.mesh().egress_ports()) {
    const auto& got = p.received();
    if (got.size() != wavelets) return "an egress port received " + std::to_string(got.size()) + " of " + std::to_string(wavelets);
    for (uint64_t k = 0; k < wavelets; ++k)
      if (got[k].wavelet.payload != uint32_t(k)) return "wavelet " + std::to_string(k) + " arrived out of order";
    if (got.back().cycle != expected)
      return "last wavelet arrived at cycle " + std::to_string(got.back().cycle) + ", expected " + std::to_string(expected);
  }
  return {};
}

// Args: mesh width W and height H, wavelets K per column, worker threads.
void BM_SaturatedColumns(benchmark::State& state) {
  const auto width = uint32_t(state.range(0)), height = uint32_t(state.range(1));
  const auto wavelets = uint64_t(state.range(2));
  const auto threads = unsigned(state.range(3));
  const Runs r = run_each_iteration(
      state, [&] { return make_columns(width, height, wavelets, threads); },
      [&](const Wafer& w) { return check_columns(w, wavelets); });
  const double seconds = r.seconds;
  const Cycle cycles = r.cycles;
  const double tiles = double(width) * height;
  state.counters["wavelet_hops/s"] = seconds > 0 ? double(wavelets) * tiles * double(r.done) / seconds : 0;
  state.counters["cycles"] = double(cycles);
  state.counters["us_per_cycle"] = cycles > 0 ? seconds * 1e6 / (double(cycles) * double(state.iterations())) : 0;
  state.counters["tile_cycles/s"] = seconds > 0 ? tiles * double(cycles) * double(state.iterations()) / seconds : 0;
  count_waiting(state, r, threads);
}

// A kernel on part of a mesh: a W x H mesh whose `busy` northmost rows each carry a saturated
// row's flow (colour 0, west to east, at link rate) and whose other rows are idle. The workers'
// bands hold equal shares of the work the placed kernel puts on the mesh (Partition::make over
// Wafer::work_estimate), so on two workers each gets half the busy rows. With idle_routes = 1 the
// idle rows also route a colour that nothing is ever sent on: the estimate then sees every row
// alike and the bands hold equal tile counts, as every partition did before it followed the work
// (on 32 x 8 with 4 busy rows: every busy row on one worker).
std::unique_ptr<Wafer> make_partly_used(uint32_t width, uint32_t height, uint32_t busy, uint64_t wavelets, bool idle_routes,
                                        unsigned threads) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 0;
  auto wafer = std::make_unique<Wafer>(spec, MeshShape{width, height});
  Mesh& mesh = wafer->mesh();
  for (uint32_t y = 0; y < height; ++y) {
    if (y >= busy) {
      if (idle_routes) {
        for (uint32_t x = 0; x < width; ++x) mesh.set_route({x, y}, 1, Route::make(Dir::West, {Dir::East}));
        mesh.add_ingress({0, y}, Dir::West);  // from which nothing comes
        mesh.add_egress({width - 1, y}, Dir::East);
      }
      continue;
    }
    for (uint32_t x = 0; x < width; ++x) mesh.set_route({x, y}, kColour, Route::make(Dir::West, {Dir::East}));
    IngressPort& in = mesh.add_ingress({0, y}, Dir::West);
    for (uint64_t k = 0; k < wavelets; ++k) in.enqueue(Wavelet{uint32_t(k), kColour});
    mesh.add_egress({width - 1, y}, Dir::East).reserve(wavelets);
  }
  wafer->finalize(threads);
  return wafer;
}

// Args: mesh width W and height H, busy rows, wavelets K per busy row, idle_routes, threads.
void BM_PartlyUsedMesh(benchmark::State& state) {
  const auto width = uint32_t(state.range(0)), height = uint32_t(state.range(1)), busy = uint32_t(state.range(2));
  const auto wavelets = uint64_t(state.range(3));
  const bool idle_routes = state.range(4) != 0;
  const auto threads = unsigned(state.range(5));
  const Runs r = run_each_iteration(
      state, [&] { return make_partly_used(width, height, busy, wavelets, idle_routes, threads); },
      [&](const Wafer& w) {
        const Cycle expected = (wavelets - 1) + Cycle(width) * w.spec().hop_latency_cycles;
        uint32_t delivered = 0;
        for (const EgressPort& p : w.mesh().egress_ports()) {
          const auto& got = p.received();
          if (got.empty()) continue;  // an idle row's
          ++delivered;
          if (got.size() != wavelets || got.back().wavelet.payload != uint32_t(wavelets - 1) || got.back().cycle != expected)
            return std::string("a busy row did not deliver its wavelets in order on time");
        }
        return delivered == busy ? std::string() : std::string("not every busy row delivered");
      });
  state.counters["wavelet_hops/s"] = r.seconds > 0 ? double(wavelets) * width * busy * double(r.done) / r.seconds : 0;
  state.counters["cycles"] = double(r.cycles);
  count_waiting(state, r, threads);
}

// The ceiling itself, per row width (one thread).
void BM_BareLoop(benchmark::State& state) {
  const auto width = uint32_t(state.range(0));
  double rate = 0;
  for (auto _ : state) rate = bench::bare_loop_tile_cycles_per_second(width, 1, 0.2);
  state.counters["tile_cycles/s"] = rate;
}
BENCHMARK(BM_BareLoop)->ArgNames({"W"})->Arg(64)->Arg(512)->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_LeanRow)->ArgNames({"W", "K"})->Args({16, 400000})->Args({64, 100000})->Args({512, 20000})->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK(BM_SaturatedRow)
    ->ArgNames({"W", "K", "threads"})
    ->Args({16, 400000, 1})
    ->Args({64, 100000, 1})
    ->Args({512, 20000, 1})
    ->Args({512, 20000, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_SaturatedRowWest)
    ->ArgNames({"W", "K", "threads"})
    ->Args({64, 100000, 1})
    ->Args({512, 20000, 1})
    ->Args({512, 20000, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_SaturatedColumns)
    ->ArgNames({"W", "H", "K", "threads"})
    ->Args({16, 16, 20000, 1})
    ->Args({16, 16, 20000, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_PartlyUsedMesh)
    ->ArgNames({"W", "H", "busy", "K", "idle_routes", "threads"})
    ->Args({32, 8, 4, 20000, 0, 1})
    ->Args({32, 8, 4, 20000, 0, 2})
    ->Args({32, 8, 4, 20000, 1, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
