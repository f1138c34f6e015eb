#include "fabric/partition.hpp"

#include <algorithm>

namespace wse {

namespace {

// Row bands; a mesh with fewer rows than workers (a single row, say) is cut into column bands.
bool row_bands(MeshShape shape, unsigned workers) { return shape.height >= std::min<uint64_t>(workers, shape.width); }

}  // namespace

unsigned Partition::workers_for(MeshShape shape, unsigned workers) {
  const uint32_t extent = row_bands(shape, workers) ? shape.height : shape.width;
  return std::clamp<unsigned>(workers, 1, std::max<uint32_t>(1, std::min<uint32_t>(extent, 4096)));
}

unsigned Partition::automatic_workers(MeshShape shape, uint64_t busy, unsigned available) {
  const uint64_t paid = std::max<uint64_t>(1, busy / kTilesPerWorker);
  return workers_for(shape, unsigned(std::min<uint64_t>(std::max(1u, available), paid)));
}

Partition Partition::make(MeshShape shape, unsigned workers, unsigned bands_per_worker) {
  Partition p;
  const bool rows = row_bands(shape, workers);
  const uint32_t extent = rows ? shape.height : shape.width;
  p.workers = workers_for(shape, workers);
  // More bands balance a sweeping wave better, but every band edge costs a mailbox post per
  // crossing wavelet and a polled link: keep bands at 128 tiles or more. (At 64, a 16x16 FC step
  // on two workers had three band edges and ran slower than one worker; at 128 it has one and
  // runs 1.5x faster: docs/performance.md.)
  const uint64_t by_size = std::max<uint64_t>(1, shape.tiles() / (128 * uint64_t(p.workers)));
  const auto per_worker = uint32_t(std::min<uint64_t>(std::max(1u, bands_per_worker), by_size));
  const uint32_t bands = p.workers == 1 ? 1 : std::min<uint32_t>(extent, p.workers * per_worker);
  p.owner.resize(shape.tiles());
  for (uint32_t b = 0; b < bands; ++b) {
    const auto lo = uint32_t(uint64_t(extent) * b / bands), hi = uint32_t(uint64_t(extent) * (b + 1) / bands);
    Block block = rows ? Block{0, lo, shape.width, hi} : Block{lo, 0, hi, shape.height};
    block.worker = uint16_t(b % p.workers);
    p.blocks.push_back(block);
    for (uint32_t y = block.y0; y < block.y1; ++y)
      for (uint32_t x = block.x0; x < block.x1; ++x) p.owner[shape.id({x, y})] = block.worker;
  }
  return p;
}

}  // namespace wse
