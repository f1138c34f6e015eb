#pragma once
// How the mesh is shared among worker threads: bands of whole rows, a band of every round of
// `workers` bands to each worker, the heaviest to the least loaded.
// Several bands per worker keep the load even when work sweeps across the mesh as a wave (a
// multicast running south, partial sums running east): each worker always holds some of the
// rows the wave is in. Bands hold equal shares of the work the kernel placed on the mesh (known
// before the run: Wafer::work_estimate), not of its tiles, so a kernel that uses some rows of a
// mesh has those rows shared among the workers, not the idle ones.
#include <cstdint>
#include <span>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

struct Block {
  uint32_t x0, y0, x1, y1;  // [x0,x1) x [y0,y1)
  uint16_t worker = 0;
};

struct Partition {
  unsigned workers = 1;
  std::vector<Block> blocks;
  std::vector<uint16_t> owner;  // tile -> worker
  bool rows = true;             // bands of whole rows (else of whole columns)

  // `workers` is clamped to [1, min(rows, 4096)] (or columns, for a mesh with fewer rows than workers);
  // each worker gets up to bands_per_worker bands, fewer on small meshes or kernels (bands of >= 128
  // tiles, counting with `work` only the tiles that have some).
  // `work`, one figure per tile (or empty: every tile alike), is what stepping the tile costs;
  // band edges are placed so that every band holds as equal a share of it as whole rows (or
  // columns) allow, each band at least one row. All zero counts as every tile alike.
  static Partition make(MeshShape shape, unsigned workers, unsigned bands_per_worker = 16,
                        std::span<const uint32_t> work = {});
  // The workers make() would use for `workers` asked: what a run reports as its threads.
  static unsigned workers_for(MeshShape shape, unsigned workers);

  // When the user leaves the count to the engine: the workers a mesh pays for, one per
  // kTilesPerWorker tiles, at most `available`. Below that a second worker costs more in
  // synchronization (a barrier per cycle) than it takes off; from a 16x16 mesh on, two pay
  // (measured in docs/performance-history.md).
  static constexpr uint64_t kTilesPerWorker = 128;
  static unsigned automatic_workers(MeshShape shape, unsigned available) { return automatic_workers(shape, shape.tiles(), available); }
  // The same, counting only the `busy` tiles a kernel placed work on (a mesh whose kernel uses a
  // corner or a row pays for the workers of that many tiles, not of the whole mesh).
  static unsigned automatic_workers(MeshShape shape, uint64_t busy, unsigned available);
  // The lines (rows, or columns where make() would cut column bands for `workers`) holding any of
  // `work`: a worker takes whole lines, so at most this many workers get some of it (a chain
  // along one row of a three-row mesh gives a second worker nothing to step but the barrier).
  static uint32_t lines_with_work(MeshShape shape, unsigned workers, std::span<const uint32_t> work);
  // Whether make() cuts bands of rows (else of columns: a mesh with fewer rows than workers).
  static bool cuts_rows(MeshShape shape, unsigned workers);
};

}  // namespace wse
