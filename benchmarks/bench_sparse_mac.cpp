// Sparse weight streaming: emulated MACs per host second and modeled cycles vs weight sparsity.
//
// Each PE holds a resident activation block A (kVec x kCols fp32, column-major) and an
// accumulator y (kVec). Weights arrive as sparse wavelets (Wavelet::sparse: fp16 value + 16-bit
// column index); each one triggers the data task y(:) += A(:, index) * value (PeContext::axpy).
// Zero weights are never sent, so they cost neither fabric bandwidth nor PE cycles.
// One weight stream per PE column enters at the north edge and is multicast down the column
// (route N -> {RAMP, S}), so every PE of a column applies the same weights to its own A.
//
// Args: mesh side P (1 = one PE), sparsity in units of 1/10000. Counters: macs (checked to equal
// nonzeros x column height x kVec, SkipWithError otherwise), macs_per_second (emulated MACs per
// host second of the run), cycles (modeled), nonzeros (all columns), cycles_per_nonzero (per
// nonzero of one column's stream).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "wafer/wafer.hpp"

namespace {

using namespace wse;

constexpr Colour kWeights = 0;
constexpr uint32_t kVec = 32;      // y and every column of A: 32 fp32
constexpr uint32_t kCols = 256;    // columns of A (= indices a weight can name): 32 KiB per PE
constexpr uint32_t kRounds = 64;   // the stream names every column this many times (64 x 256 weights)

struct Vars {
  uint32_t a_offset, y_offset;
};

void on_weight(PeContext& ctx, Wavelet w) {
  const Vars& v = *ctx.at<Vars>(0u);
  const float* a = ctx.at<float>(v.a_offset) + size_t(w.sparse_index()) * kVec;
  ctx.axpy(ctx.at<float>(v.y_offset), float(w.sparse_value()), a, kVec);
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: deterministic weights per (column, position)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The nonzero weights of PE column x's stream at `sparsity` (of 10000).
std::vector<Wavelet> weight_stream(uint32_t x, uint32_t sparsity) {
  std::vector<Wavelet> out;
  for (uint32_t k = 0; k < kRounds * kCols; ++k) {
    const uint64_t h = mix((uint64_t(x) << 32) | k);
    if (h % 10000 < sparsity) continue;  // a zero weight: never sent
    const float value = 0.25f + float((h >> 20) % 1000) / 1000.0f;
    out.push_back(Wavelet::sparse(kWeights, _Float16(value), uint16_t(k % kCols)));
  }
  return out;
}

void BM_SparseMac(benchmark::State& state) {
  const auto side = uint32_t(state.range(0));
  const auto sparsity = uint32_t(state.range(1));
  std::vector<std::vector<Wavelet>> streams;
  uint64_t nonzeros = 0;
  for (uint32_t x = 0; x < side; ++x) {
    streams.push_back(weight_stream(x, sparsity));
    nonzeros += streams.back().size();
  }
  const uint64_t expected_macs = nonzeros * side * kVec;
  Program prog;
  prog.name = "sparse_axpy";
  prog.on(kWeights, on_weight);
  std::vector<float> a(size_t(kVec) * kCols);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 97) / 97.0f;

  double seconds = 0;
  uint64_t macs = 0;
  Cycle cycles = 0;
  for (auto _ : state) {
    // Set-up (wafer, routes, SRAM, streams) is outside the timed run.
    Wafer wafer(MachineSpec{}, MeshShape{side, side});
    Mesh& mesh = wafer.mesh();
    for (uint32_t x = 0; x < side; ++x) {
      for (uint32_t y = 0; y < side; ++y) {
        const Coord c{x, y};
        mesh.set_route(c, kWeights, y + 1 < side ? Route::make(Dir::North, {Dir::Ramp, Dir::South})
                                                  : Route::make(Dir::North, {Dir::Ramp}));
        wafer.load(c, &prog);
        const SramRef vars = wafer.allocate(c, "vars", sizeof(Vars));
        const SramRef am = wafer.allocate(c, "A", uint32_t(a.size() * sizeof(float)));
        const SramRef ym = wafer.allocate(c, "y", kVec * sizeof(float));
        uint8_t* base = wafer.pe(c).sram.base();
        const Vars v{am.offset, ym.offset};
        std::memcpy(base + vars.offset, &v, sizeof v);
        std::memcpy(base + am.offset, a.data(), a.size() * sizeof(float));
        std::memset(base + ym.offset, 0, kVec * sizeof(float));
      }
      IngressPort& in = mesh.add_ingress({x, 0}, Dir::North);
      for (const Wavelet& w : streams[x]) in.enqueue(w);
    }
    wafer.finalize(1);
    WaferRun run = wafer.run(Cycle{1} << 40);
    state.SetIterationTime(std::max(run.host_seconds, 1e-9));
    macs = 0;
    for (const Pe& pe : wafer.pes()) macs += pe.counters.macs;
    if (run.engine.hit_cycle_limit || macs != expected_macs) {
      state.SkipWithError(("MACs " + std::to_string(macs) + " != nonzeros x vector length " +
                           std::to_string(expected_macs)).c_str());
      break;
    }
    seconds += run.host_seconds;
    cycles = run.cycles;
  }
  state.counters["sparsity"] = sparsity / 10000.0;
  state.counters["nonzeros"] = double(nonzeros);
  state.counters["macs"] = double(macs);
  state.counters["cycles"] = double(cycles);
  // Per nonzero of one column's stream: the columns run side by side.
  state.counters["cycles_per_nonzero"] = nonzeros ? double(cycles) * side / double(nonzeros) : 0;
  state.counters["macs_per_second"] = seconds > 0 ? double(macs) * double(state.iterations()) / seconds : 0;
}

BENCHMARK(BM_SparseMac)
    ->ArgNames({"P", "sparsity_bp"})
    ->ArgsProduct({{1, 16}, {0, 5000, 9000, 9900}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
