// Where a mesh keeps its routers' lanes (fabric/lane_pool.hpp): each router's array holds exactly
// its lanes, the arrays of routers routed one after another lie side by side, and the arrays a
// router let go while it grew are taken again rather than left behind.
#include <gtest/gtest.h>

#include "fabric/lane_pool.hpp"
#include "fabric/mesh.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

TEST(LanePool, RoutersRoutedInTurnHaveTheirExactLanesSideBySide) {
  Mesh m(test::spec(1), MeshShape{5, 1});
  for (uint32_t x = 0; x < 5; ++x)
    for (Colour c = 0; c < 3; ++c) {
      const bool first = x == 0, last = x == 4;
      m.set_route({x, 0}, c, Route::make(first ? Dir::Ramp : Dir::West, {last ? Dir::Ramp : Dir::East}));
    }
  for (uint32_t x = 0; x < 5; ++x) {
    const Router* r = m.router(x);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->lanes.size(), 3u);
    EXPECT_EQ(r->lanes.capacity(), 3u) << "tile " << x << ": a router keeps no slack";
    for (Colour c = 0; c < 3; ++c) EXPECT_EQ(r->lane(c)->colour, c);
    if (x) { EXPECT_EQ(r->lanes.data(), m.router(x - 1)->lanes.data() + 3) << "tile " << x << ": right after the router before"; }
  }
}

TEST(LanePool, AnArrayGivenBackIsTheNextOfItsLengthTaken) {
  LanePool pool;
  Lane* a = pool.take(2);
  Lane* b = pool.take(1);
  EXPECT_EQ(b, a + 2);  // handed out side by side
  pool.give_back(a, 2);
  EXPECT_EQ(pool.take(1), b + 1);  // a different length: a new one
  EXPECT_EQ(pool.take(2), a);      // the same length: the one given back
}

TEST(LanePool, ARouterMadeOutsideAMeshTakesItsLanesFromTheHeap) {
  Router r;
  for (Colour c = 0; c < 4; ++c) {
    Lane l;
    l.colour = c;
    r.lanes.push_back(l);
  }
  ASSERT_EQ(r.lanes.size(), 4u);
  for (Colour c = 0; c < 4; ++c) EXPECT_EQ(r.lanes[c].colour, c);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.lanes.data()) % alignof(Lane), 0u);
}

}  // namespace
}  // namespace wse
