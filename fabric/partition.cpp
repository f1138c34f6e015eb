#include "fabric/partition.hpp"

#include <algorithm>
#include <stdexcept>

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

namespace {

// The first line of each band, and `extent` last: bands of equal tile counts, or with `work`, the
// band edges where the running sum of the lines' work reaches each band's share of it. Every band
// keeps at least one line.
std::vector<uint32_t> band_edges(MeshShape shape, bool rows, uint32_t bands, std::span<const uint32_t> work) {
  const uint32_t extent = rows ? shape.height : shape.width;
  std::vector<uint64_t> sum(extent + 1, 0);  // work of lines [0, i)
  for (uint32_t i = 0; i < extent; ++i) {
    uint64_t line = 0;
    if (!work.empty()) {
      const uint32_t n = rows ? shape.width : shape.height;
      for (uint32_t j = 0; j < n; ++j) line += work[shape.id(rows ? Coord{j, i} : Coord{i, j})];
    }
    sum[i + 1] = sum[i] + line;
  }
  std::vector<uint32_t> edge(bands + 1, extent);
  edge[0] = 0;
  const uint64_t total = sum[extent] ? sum[extent] : extent;
  uint32_t at = 0;
  for (uint32_t b = 1; b < bands; ++b) {
    // The line before which the work comes nearest to b/bands of the whole, the earlier of two
    // as near (with every tile alike: extent * b / bands rounded to the nearest line).
    const uint64_t want = total * b;
    auto before = [&](uint32_t i) { return (sum[extent] ? sum[i] : i) * bands; };
    while (at < extent && before(at + 1) <= want) ++at;
    if (at < extent && before(at + 1) - want < want - before(at)) ++at;
    edge[b] = std::clamp(at, edge[b - 1] + 1, extent - (bands - b));
  }
  return edge;
}

}  // namespace

Partition Partition::make(MeshShape shape, unsigned workers, unsigned bands_per_worker, std::span<const uint32_t> work) {
  if (!work.empty() && work.size() != shape.tiles())
    throw std::invalid_argument("Partition::make: work has " + std::to_string(work.size()) + " figures for " +
                                std::to_string(shape.tiles()) + " tiles");
  Partition p;
  const bool rows = p.rows = row_bands(shape, workers);
  const uint32_t extent = rows ? shape.height : shape.width;
  p.workers = workers_for(shape, workers);
  // More bands balance a sweeping wave better, but every band edge costs a mailbox post per
  // crossing wavelet and a polled link: keep bands at 128 tiles (with work on them) or more.
  // (At 64, a 16x16 FC step on two workers had three band edges and ran slower than one worker;
  // at 128 it has one and runs 1.5x faster: docs/performance-history.md.)
  uint64_t busy = uint64_t(std::count_if(work.begin(), work.end(), [](uint32_t v) { return v != 0; }));
  if (busy == 0) busy = shape.tiles();  // no work given, or none anywhere: every tile alike
  const uint64_t by_size = std::max<uint64_t>(1, busy / (128 * uint64_t(p.workers)));
  const auto per_worker = uint32_t(std::min<uint64_t>(std::max(1u, bands_per_worker), by_size));
  const uint32_t bands = p.workers == 1 ? 1 : std::min<uint32_t>(extent, p.workers * per_worker);
  p.owner.resize(shape.tiles());
  const std::vector<uint32_t> edge = band_edges(shape, rows, bands, work);
  for (uint32_t b = 0; b < bands; ++b) {
    const uint32_t lo = edge[b], hi = edge[b + 1];
    Block block = rows ? Block{0, lo, shape.width, hi} : Block{lo, 0, hi, shape.height};
    block.worker = uint16_t(b % p.workers);
    p.blocks.push_back(block);
    for (uint32_t y = block.y0; y < block.y1; ++y)
      for (uint32_t x = block.x0; x < block.x1; ++x) p.owner[shape.id({x, y})] = block.worker;
  }
  return p;
}

}  // namespace wse
