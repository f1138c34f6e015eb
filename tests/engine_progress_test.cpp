// The cycle engine's progress hook (RunHooks::progress, what draws `wse run`'s cycle line and a
// training step's bar): called once at the run's start, then about every 256 stepped cycles, by
// one worker, with a cycle the run has reached. (Every 4,096 until the forty-seventh round: a
// 2,145-cycle GEMV of 1.3 s never moved its line past cycle 0.)
#include <gtest/gtest.h>

#include <vector>

#include "fabric/cycle_engine.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

// One tile stepped every cycle for `cycles` cycles: nothing else to wait for.
struct TickingTile {
  Mesh m;
  Cycle cycles;
  void seed(const Block& b, Scheduler& s) {
    if (b.worker == 0) s.schedule(0, 0);
  }
  void step(TileId t, Cycle now, Scheduler& s) {
    if (now + 1 < cycles) s.schedule(t, now + 1);
  }
  Mesh& mesh() { return m; }
};

TEST(EngineProgress, CalledAtTheStartThenEvery256SteppedCycles) {
  for (unsigned workers : {1u, 2u}) {
    const MeshShape shape{8, 8};
    TickingTile tiles{Mesh(test::spec(2), shape), 1000};
    CycleEngine<TickingTile> engine;
    std::vector<Cycle> calls;
    RunHooks hooks;
    hooks.progress = [&](Cycle c) { calls.push_back(c); };  // (worker 0 alone calls it)
    const EngineResult r = engine.run(tiles, Partition::make(shape, workers, 1), 0, 100'000, hooks);
    ASSERT_EQ(r.cycles_stepped, 1000u);
    // Cycle 0, then after 256, 512 and 768 stepped cycles (the cycle due next each time).
    EXPECT_EQ(calls, (std::vector<Cycle>{0, 256, 512, 768})) << workers << " worker(s)";
  }
}

}  // namespace
}  // namespace wse
