#include "fabric/partition.hpp"

#include <algorithm>
#include <stdexcept>

namespace wse {

// Row bands; a mesh with fewer rows than workers (a single row, say) is cut into column bands.
bool Partition::cuts_rows(MeshShape shape, unsigned workers) { return shape.height >= std::min<uint64_t>(workers, shape.width); }

unsigned Partition::workers_for(MeshShape shape, unsigned workers) {
  const uint32_t extent = cuts_rows(shape, workers) ? shape.height : shape.width;
  return std::clamp<unsigned>(workers, 1, std::max<uint32_t>(1, std::min<uint32_t>(extent, 4096)));
}

unsigned Partition::automatic_workers(MeshShape shape, uint64_t busy, unsigned available) {
  const uint64_t paid = std::max<uint64_t>(1, busy / kTilesPerWorker);
  return workers_for(shape, unsigned(std::min<uint64_t>(std::max(1u, available), paid)));
}

uint32_t Partition::lines_with_work(MeshShape shape, unsigned workers, std::span<const uint32_t> work) {
  const bool rows = cuts_rows(shape, workers);
  const uint32_t extent = rows ? shape.height : shape.width, n = rows ? shape.width : shape.height;
  uint32_t lines = 0;
  for (uint32_t i = 0; i < extent; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (work[shape.id(rows ? Coord{j, i} : Coord{i, j})] != 0) {
        ++lines;
        break;
      }
  return lines;
}

namespace {

// The work of lines [0, i) for each i in 0 .. extent (all zero without `work`).
std::vector<uint64_t> line_sums(MeshShape shape, bool rows, std::span<const uint32_t> work) {
  const uint32_t extent = rows ? shape.height : shape.width;
  std::vector<uint64_t> sum(extent + 1, 0);
  for (uint32_t i = 0; i < extent; ++i) {
    uint64_t line = 0;
    if (!work.empty()) {
      const uint32_t n = rows ? shape.width : shape.height;
      for (uint32_t j = 0; j < n; ++j) line += work[shape.id(rows ? Coord{j, i} : Coord{i, j})];
    }
    sum[i + 1] = sum[i] + line;
  }
  return sum;
}

// The first line of each band, and `extent` last: bands of equal tile counts, or with work (`sum`,
// line_sums()), the band edges where the running sum of the lines' work reaches each band's share
// of it. Every band keeps at least one line.
std::vector<uint32_t> band_edges(const std::vector<uint64_t>& sum, uint32_t bands) {
  const auto extent = uint32_t(sum.size() - 1);
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

// Which worker each band goes to. In rounds of `workers` consecutive bands, each worker takes
// one band of every round (so each holds some of the rows a sweeping wave is in), the round's
// heaviest band going to the worker with the least work so far. Dealt plainly in turn (band b to
// worker b % workers), bands of unequal heights lined up with the workers: on a 130 x 40 mesh at
// two workers, 32 bands of 1 or 2 rows in a 1, 1, 1, 2 pattern gave one worker 24 rows and the
// other 16 (found by a test audit; tests/determinism_test.cpp, Partition.*).
std::vector<uint16_t> deal(const std::vector<uint64_t>& sum, const std::vector<uint32_t>& edge, unsigned workers) {
  const auto bands = uint32_t(edge.size() - 1);
  const bool any = sum.back() != 0;  // without work every tile is alike: a band's work is its lines
  std::vector<uint64_t> band_work(bands);
  for (uint32_t b = 0; b < bands; ++b) band_work[b] = any ? sum[edge[b + 1]] - sum[edge[b]] : edge[b + 1] - edge[b];
  std::vector<uint16_t> worker_of(bands, 0);
  std::vector<uint64_t> load(workers, 0);
  std::vector<uint32_t> round_bands;
  std::vector<uint8_t> taken(workers);
  for (uint32_t first = 0; first < bands; first += workers) {
    round_bands.clear();
    for (uint32_t b = first; b < std::min(bands, first + workers); ++b) round_bands.push_back(b);
    // Heaviest band first (the earlier of two alike), each to the least loaded worker not served
    // this round; of two as loaded, the one the plain deal would give it, else the lower.
    std::stable_sort(round_bands.begin(), round_bands.end(), [&](uint32_t a, uint32_t c) { return band_work[a] > band_work[c]; });
    std::fill(taken.begin(), taken.end(), uint8_t(0));
    for (uint32_t b : round_bands) {
      const unsigned plain = b % workers;
      unsigned best = plain;
      for (unsigned w = 0; w < workers; ++w) {
        if (taken[w]) continue;
        if (taken[best] || load[w] < load[best]) best = w;
      }
      if (!taken[plain] && load[plain] == load[best]) best = plain;
      taken[best] = 1;
      worker_of[b] = uint16_t(best);
      load[best] += band_work[b];
    }
  }
  return worker_of;
}

}  // namespace

Partition Partition::make(MeshShape shape, unsigned workers, unsigned bands_per_worker, std::span<const uint32_t> work) {
  if (!work.empty() && work.size() != shape.tiles())
    throw std::invalid_argument("Partition::make: work has " + std::to_string(work.size()) + " figures for " +
                                std::to_string(shape.tiles()) + " tiles");
  Partition p;
  const bool rows = p.rows = cuts_rows(shape, workers);
  const uint32_t extent = rows ? shape.height : shape.width;
  p.workers = workers_for(shape, workers);
  // More bands balance a sweeping wave better, but every band edge costs a mailbox post per
  // crossing wavelet and credit, and a tile that cannot be stepped ahead (CycleEngine's
  // run-ahead): keep bands at 128 tiles (with work on them) or more.
  // (At 64, a 16x16 FC step on two workers had three band edges and ran slower than one worker;
  // at 128 it has one and runs 1.5x faster: docs/performance-history.md.)
  uint64_t busy = uint64_t(std::count_if(work.begin(), work.end(), [](uint32_t v) { return v != 0; }));
  if (busy == 0) busy = shape.tiles();  // no work given, or none anywhere: every tile alike
  const uint64_t by_size = std::max<uint64_t>(1, busy / (128 * uint64_t(p.workers)));
  const auto per_worker = uint32_t(std::min<uint64_t>(std::max(1u, bands_per_worker), by_size));
  const uint32_t bands = p.workers == 1 ? 1 : std::min<uint32_t>(extent, p.workers * per_worker);
  p.owner.resize(shape.tiles());
  const std::vector<uint64_t> sum = line_sums(shape, rows, work);
  const std::vector<uint32_t> edge = band_edges(sum, bands);
  const std::vector<uint16_t> worker_of = deal(sum, edge, p.workers);
  for (uint32_t b = 0; b < bands; ++b) {
    const uint32_t lo = edge[b], hi = edge[b + 1];
    Block block = rows ? Block{0, lo, shape.width, hi} : Block{lo, 0, hi, shape.height};
    block.worker = worker_of[b];
    p.blocks.push_back(block);
    for (uint32_t y = block.y0; y < block.y1; ++y)
      for (uint32_t x = block.x0; x < block.x1; ++x) p.owner[shape.id({x, y})] = block.worker;
  }
  return p;
}

}  // namespace wse
