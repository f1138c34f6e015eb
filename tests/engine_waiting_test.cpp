// The cycle engine's measure of each worker's waiting at the barrier (EngineResult::waiting, the
// report's threads_detail.waiting): a hand-made set of tiles where every tile with work lies in
// worker 0's band, so worker 1 has nothing to do but wait for it every cycle, and the reverse.
// Host time, so the checks are orderings and bounds, not figures: the idle worker waits for most
// of the run and longer than the busy one; one worker has nothing to measure.
#include <gtest/gtest.h>

#include "fabric/cycle_engine.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

// Tiles whose work lies in the band of worker `busy`: the first tile of each of that worker's
// bands steps every cycle for `cycles` cycles, burning about ten thousand register-only
// instructions (no memory touched, so a sanitizer slows it no more than the engine around it).
struct LopsidedTiles {
  Mesh m;
  uint16_t busy;
  Cycle cycles;
  uint64_t sink = 0;
  void seed(const Block& b, Scheduler& s) {
    if (b.worker == busy) s.schedule(TileId(b.y0) * m.shape().width, 0);  // the band's first tile
  }
  void step(TileId t, Cycle now, Scheduler& s) {
    uint64_t x = t + now;
    for (int i = 0; i < 4000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(x));
    }
    sink += x & 1;  // only this worker's tiles step: no other thread writes it
    if (now + 1 < cycles) s.schedule(t, now + 1);
  }
  Mesh& mesh() { return m; }
};

EngineResult run_lopsided(unsigned workers, uint16_t busy) {
  const MeshShape shape{8, 8};
  const Partition p = Partition::make(shape, workers, 1);
  LopsidedTiles tiles{Mesh(test::spec(2), shape), busy, 500};
  CycleEngine<LopsidedTiles> engine;
  return engine.run(tiles, p, 0, 100'000);
}

TEST(EngineWaiting, TheWorkerWithNothingToDoWaitsForMostOfTheRun) {
  for (uint16_t busy : {uint16_t(0), uint16_t(1)}) {
    const EngineResult r = run_lopsided(2, busy);
    EXPECT_EQ(r.cycles_stepped, 500u);
    ASSERT_EQ(r.waiting.size(), 2u);
    const double idle = r.waiting[1 - busy], worker = r.waiting[busy];
    EXPECT_GT(idle, 0.5) << "busy worker " << busy;
    EXPECT_LE(idle, 1.0);
    EXPECT_GE(worker, 0.0);
    EXPECT_LT(worker, idle) << "busy worker " << busy;
  }
}

TEST(EngineWaiting, OneWorkerHasNoBarrierToWaitAt) {
  const EngineResult r = run_lopsided(1, 0);
  EXPECT_EQ(r.cycles_stepped, 500u);
  EXPECT_TRUE(r.waiting.empty());
}

}  // namespace
}  // namespace wse
