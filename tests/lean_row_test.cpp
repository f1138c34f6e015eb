// The lean row (benchmarks/lean_row.hpp), the reference BM_SaturatedRow's `of_lean` divides by,
// must run the engine's row: the same cycles, every wavelet in order at the closed-form time. If it
// drifted from the engine's rules, the figure would compare the engine with some other machine.
#include <gtest/gtest.h>

#include "../benchmarks/lean_row.hpp"
#include "wafer/wafer.hpp"

namespace wse {
namespace {

// The engine's saturated row (bench_fabric's make_row): W routers moving colour 0 west to east
// from an ingress port at link rate to an egress port.
WaferRun engine_row(uint32_t width, uint64_t wavelets) {
  MachineSpec spec;
  spec.io_bytes_per_cycle = 0;
  Wafer wafer(spec, MeshShape{width, 1});
  Mesh& mesh = wafer.mesh();
  for (uint32_t x = 0; x < width; ++x) mesh.set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
  IngressPort& in = mesh.add_ingress({0, 0}, Dir::West);
  for (uint64_t k = 0; k < wavelets; ++k) in.enqueue(Wavelet{uint32_t(k), 0});
  mesh.add_egress({width - 1, 0}, Dir::East);
  wafer.finalize(1);
  WaferRun run = wafer.run(Cycle{1} << 40);
  const auto& got = wafer.mesh().egress_ports().front().received();
  EXPECT_EQ(got.size(), wavelets);
  if (!got.empty()) {
    EXPECT_EQ(got.back().cycle, (wavelets - 1) + width);  // a cycle a hop (the spec's default)
  }
  return run;
}

TEST(LeanRow, RunsTheEnginesRowCycleForCycle) {
  for (auto [width, wavelets] : {std::pair<uint32_t, uint64_t>{1, 1}, {1, 6}, {2, 3}, {7, 40}, {64, 300}, {130, 200}}) {
    SCOPED_TRACE("W " + std::to_string(width) + ", K " + std::to_string(wavelets));
    bench::LeanRow row(width, wavelets);
    const uint64_t cycles = row.run();
    EXPECT_EQ(row.check(), "");
    // Hand-worked: wavelet k leaves router x at cycle k + x and reaches the egress at k + W, the
    // run's last event (with the last router's credit, which wakes the one before it then).
    EXPECT_EQ(cycles, (wavelets - 1) + width + 1);
    EXPECT_EQ(cycles, engine_row(width, wavelets).cycles);
  }
}

TEST(LeanRow, ItsCheckCatchesARowThatIsNotAtLinkRate) {
  // One slot a lane: a credit comes back a cycle after the wavelet left and is seen the cycle
  // after, so each router sends every other cycle: wavelet k reaches the egress at 2k + W, which
  // the check's closed form must refuse.
  const uint32_t width = 5;
  const uint64_t wavelets = 4;
  bench::LeanRow row(width, wavelets, 1);
  EXPECT_EQ(row.run(), 2 * (wavelets - 1) + width + 1);
  EXPECT_EQ(row.check(), "lean row: last wavelet arrived at cycle 11, expected 8");
  EXPECT_THROW(bench::LeanRow(0, 1), std::invalid_argument);
  EXPECT_THROW(bench::LeanRow(4, 1, 5), std::invalid_argument);
}

}  // namespace
}  // namespace wse
