// How many workers a run uses: the engine's own choice when --threads is not given (one worker
// per Partition::kTilesPerWorker tiles of a wafer's mesh, or of the tiles a placed single-run
// kernel uses; wafers side by side first), and the user's count as given otherwise. The expected counts are worked out by hand from the rule.
#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "fabric/partition.hpp"
#include "host/thread_choice.hpp"
#include "wafer/wafer.hpp"

namespace wse {
namespace {

RunConfig mesh_config(const std::string& kernel, uint32_t w, uint32_t h) {
  RunConfig cfg;
  cfg.kernel = kernel;
  cfg.mesh = {w, h};
  cfg.source = "test.yaml";
  return cfg;
}

TEST(ThreadChoice, TheEnginePaysOneWorkerPer128Tiles) {
  static_assert(Partition::kTilesPerWorker == 128, "the cases below are worked out for 128");
  EXPECT_EQ(Partition::automatic_workers({8, 8}, 2), 1u);      // 64 tiles: one
  EXPECT_EQ(Partition::automatic_workers({16, 8}, 2), 1u);     // 128 tiles: one
  EXPECT_EQ(Partition::automatic_workers({16, 16}, 2), 2u);    // 256 tiles: two
  EXPECT_EQ(Partition::automatic_workers({16, 16}, 1), 1u);    // never more than available
  EXPECT_EQ(Partition::automatic_workers({32, 32}, 16), 8u);   // 1024 tiles: eight
  EXPECT_EQ(Partition::automatic_workers({256, 2}, 8), 4u);    // 512 tiles; fewer rows than workers: column bands
  EXPECT_EQ(Partition::automatic_workers({2, 256}, 8), 4u);    // 512 tiles in row bands
  EXPECT_EQ(Partition::automatic_workers({512, 1}, 2), 2u);    // a row: column bands
}

TEST(ThreadChoice, BandsAreAtLeast128Tiles) {
  // 16x16 on two workers: 256 / (128 * 2) = 1 band each, one band edge.
  const Partition p = Partition::make({16, 16}, 2);
  ASSERT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.blocks[0].y1, 8u);
  EXPECT_NE(p.blocks[0].worker, p.blocks[1].worker);
  // 64x64 on two workers: 4096 / 256 = 16 bands each (the cap).
  EXPECT_EQ(Partition::make({64, 64}, 2).blocks.size(), 32u);
}

TEST(ThreadChoice, AGivenCountIsUsedAsAsked) {
  const ThreadChoice c = choose_threads(mesh_config("gemv", 8, 8), 3);
  EXPECT_EQ(c.threads, 3u);
  EXPECT_FALSE(c.automatic);
  EXPECT_TRUE(c.note.empty());
  EXPECT_EQ(c.to_json()["asked"], 3);
}

TEST(ThreadChoice, TheDefaultSaysWhenItUsedFewer) {
  const unsigned hw = usable_hardware_threads();
  const ThreadChoice small = choose_threads(mesh_config("gemv", 8, 8), 0);
  EXPECT_TRUE(small.automatic);
  EXPECT_EQ(small.threads, 1u);
  EXPECT_EQ(small.to_json()["asked"], "default");
  if (hw > 1) {
    EXPECT_NE(small.note.find("64-tile mesh"), std::string::npos) << small.note;
  } else {
    EXPECT_TRUE(small.note.empty());
  }
  const ThreadChoice big = choose_threads(mesh_config("gemv", 256, 256), 0);
  EXPECT_EQ(big.threads, std::min(hw, 256u));
  EXPECT_TRUE(big.note.empty());
}

// A single-run kernel is placed before the run, so the engine's choice can count the tiles it
// uses (a program or a route) instead of the whole mesh: a chain along one row of a 128x32 mesh
// (128 tiles of 4096) runs on one worker, where the mesh alone would pay for 32.
TEST(ThreadChoice, TheDefaultFollowsTheTilesAKernelUses) {
  EXPECT_EQ(Partition::automatic_workers({128, 32}, 128, 2), 1u);   // one row in use: one
  EXPECT_EQ(Partition::automatic_workers({128, 32}, 256, 2), 2u);   // two rows: two
  EXPECT_EQ(Partition::automatic_workers({128, 32}, 4096, 8), 8u);  // the whole mesh, as before
  EXPECT_EQ(Partition::automatic_workers({128, 32}, 0, 2), 1u);     // nothing placed: still one

  MachineSpec spec;
  Wafer wafer(spec, {128, 32});
  for (uint32_t x = 0; x < 128; ++x) wafer.mesh().set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
  EXPECT_EQ(wafer.tiles_in_use(), 128u);
  ThreadChoice automatic;
  automatic.automatic = true, automatic.threads = 2, automatic.hardware = 2;
  const ThreadChoice one_row = fit_to_kernel(automatic, wafer);
  EXPECT_EQ(one_row.threads, 1u);
  EXPECT_NE(one_row.note.find("uses 128 of the mesh's 4096 tiles"), std::string::npos) << one_row.note;
  EXPECT_EQ(one_row.to_json()["asked"], "default");
  ThreadChoice given = automatic;
  given.automatic = false;
  EXPECT_EQ(fit_to_kernel(given, wafer).threads, 2u);  // --threads is used as asked
  EXPECT_TRUE(fit_to_kernel(given, wafer).note.empty());

  for (uint32_t x = 0; x < 128; ++x) wafer.mesh().set_route({x, 1}, 1, Route::make(Dir::West, {Dir::East}));
  EXPECT_EQ(wafer.tiles_in_use(), 256u);
  const ThreadChoice two_rows = fit_to_kernel(automatic, wafer);
  EXPECT_EQ(two_rows.threads, 2u);
  EXPECT_TRUE(two_rows.note.empty());
}

// A chain along the top row of a 750x3 mesh uses 750 tiles, which pay for five workers; but bands
// are whole rows, so a second worker had a band with nothing on it and waited 99.8% of the run
// (1.35-1.64 s against 0.66-0.80 s at one thread while other processes ran; on a quiet host within
// noise). The default now takes no more workers than there are rows with work.
TEST(ThreadChoice, TheDefaultTakesNoMoreWorkersThanTheRowsWithWork) {
  MachineSpec spec;
  Wafer wafer(spec, {750, 3});
  for (uint32_t x = 0; x < 750; ++x) wafer.mesh().set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
  const std::vector<uint32_t> work = wafer.work_estimate();
  EXPECT_EQ(Partition::lines_with_work({750, 3}, 2, work), 1u);
  EXPECT_EQ(Partition::lines_with_work({750, 3}, 5, work), 750u);  // five workers would cut columns
  ThreadChoice automatic;
  automatic.automatic = true, automatic.threads = 2, automatic.hardware = 2;
  const ThreadChoice one = fit_to_kernel(automatic, wafer);
  EXPECT_EQ(one.threads, 1u);
  EXPECT_NE(one.note.find("uses 750 of the mesh's 2250 tiles (a program or a route), all in 1 row(s) of the mesh"), std::string::npos)
      << one.note;
  for (uint32_t x = 0; x < 750; ++x) wafer.mesh().set_route({x, 2}, 1, Route::make(Dir::West, {Dir::East}));
  const ThreadChoice two = fit_to_kernel(automatic, wafer);  // two rows with work: two workers
  EXPECT_EQ(two.threads, 2u);
  EXPECT_TRUE(two.note.empty()) << two.note;
}

// hardware_threads counts the CPUs the process may run on: under `taskset -c 0` the default took
// two workers that then took turns on one CPU.
TEST(ThreadChoice, TheHardwareThreadsAreThoseTheProcessMayRunOn) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(usable_hardware_threads(), unsigned(CPU_COUNT(&all)));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  const unsigned seen = usable_hardware_threads();
  const ThreadChoice c = choose_threads(mesh_config("gemv", 256, 256), 0);
  ASSERT_EQ(::sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(seen, 1u);
  EXPECT_EQ(c.hardware, 1u);
  EXPECT_EQ(c.threads, 1u);
}

TEST(ThreadChoice, WafersSideBySideComeFirst) {
  const unsigned hw = usable_hardware_threads();
  RunConfig cfg = mesh_config("fc_train", 16, 16);
  cfg.train.num_csx = 2;
  const ThreadChoice c = choose_threads(cfg, 0);
  // Two wafers: both at once when there are two threads; each then gets what is left, up to
  // the two workers a 256-tile mesh pays for.
  const unsigned expected = hw < 2 ? hw : 2 * std::min(hw / 2, 2u);
  EXPECT_EQ(c.threads, expected);
}

}  // namespace
}  // namespace wse
