// Where a mesh keeps its routers (fabric/mesh.hpp): when every tile has one and they lie side by
// side in tile order, a tile's router is found from its number (Mesh::dense_routers, which
// Wafer::step uses); otherwise through the mesh's table. Either way a run is the same run.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace wse {
namespace {

// A w x h mesh whose row 0 routes colour 0 west -> east (routed from its west end, or its east
// end), with `k` wavelets from the west edge to the east edge; the other rows have no routes.
struct RoutedRow {
  Wafer wafer;
  EgressPort* out;
  RoutedRow(uint32_t w, uint32_t h, uint32_t k, bool from_east, unsigned threads = 1) : wafer(test::spec(1), {w, h}) {
    Mesh& mesh = wafer.mesh();
    for (uint32_t i = 0; i < w; ++i) mesh.set_route({from_east ? w - 1 - i : i, 0}, 0, Route::make(Dir::West, {Dir::East}));
    IngressPort& in = mesh.add_ingress({0, 0}, Dir::West);
    for (uint32_t j = 0; j < k; ++j) in.enqueue(Wavelet{j, 0});
    out = &mesh.add_egress({w - 1, 0}, Dir::East);
    wafer.finalize(threads);
  }
};

TEST(MeshRouters, EveryTileRoutedInTileOrderFindsItsRouterFromItsNumber) {
  RoutedRow row(8, 1, 1, false);
  const Mesh& mesh = row.wafer.mesh();
  ASSERT_NE(mesh.dense_routers(), nullptr);
  for (TileId t = 0; t < 8; ++t) EXPECT_EQ(mesh.dense_routers() + t, mesh.router(t)) << "tile " << t;
}

TEST(MeshRouters, RoutersOutOfTileOrderOrTilesWithoutOneAreFoundThroughTheTable) {
  EXPECT_EQ(RoutedRow(8, 1, 1, true).wafer.mesh().dense_routers(), nullptr) << "routed from the east end";
  EXPECT_EQ(RoutedRow(8, 2, 1, false).wafer.mesh().dense_routers(), nullptr) << "a row without routes";
}

// The same row, its routers found either way, delivers the same wavelets at the same cycles:
// one a cycle, each after w hops; at 1 and 2 threads.
TEST(MeshRouters, ARunIsTheSameWhicheverWayItsRoutersAreFound) {
  const uint32_t w = 6, k = 40;
  for (unsigned threads : {1u, 2u})
    for (bool from_east : {false, true}) {
      RoutedRow row(w, 1, k, from_east, threads);
      EXPECT_EQ(row.wafer.mesh().dense_routers() != nullptr, !from_east);
      row.wafer.run(10000);
      const auto& got = row.out->received();
      ASSERT_EQ(got.size(), k);
      for (uint32_t j = 0; j < k; ++j) {
        EXPECT_EQ(got[j].wavelet.payload, j);
        EXPECT_EQ(got[j].cycle, Cycle(j + w)) << "wavelet " << j << (from_east ? ", routed from the east end" : "") << ", threads " << threads;
      }
    }
}

}  // namespace
}  // namespace wse
