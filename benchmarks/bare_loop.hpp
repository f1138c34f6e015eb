#pragma once
// The ceiling the benchmarks are read against: a bare two-phase loop over a W x H mesh, where
// each cycle every tile takes the word on its west link and then puts one on its east link — no
// colours, credits, queues or scheduling. It is the most a cycle-by-cycle engine could do per tile
// on this host, measured in the same process as the figure it scales, so a figure divided by it
// compares across machines (issue 14: speed tracked like a result).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace wse::bench {

// Tile-cycles per second of the bare loop on one thread (measured for at least `min_seconds`).
// A tile holds at most one word and a link carries at most one; phase 1: every tile with room
// takes the word on its west link; phase 2: every tile holding a word puts it on its east link if
// that is free. The east edge drains, the west edge injects: one word per tile per cycle, with
// the per-tile tests a real engine cannot avoid but nothing else.
inline double bare_loop_tile_cycles_per_second(uint32_t w, uint32_t h, double min_seconds = 0.3) {
  struct Slot {
    uint32_t word = 0;
    uint32_t full = 0;
  };
  std::vector<Slot> link(size_t(w + 1) * h), tile(size_t(w) * h);
  uint64_t cycles = 0, delivered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  do {
    for (int rep = 0; rep < 16; ++rep, ++cycles) {
      for (uint32_t y = 0; y < h; ++y) {
        Slot* row = &link[size_t(y) * (w + 1)];
        Slot* t = &tile[size_t(y) * w];
        if (!row[0].full) row[0] = {uint32_t(cycles), 1};  // the west edge injects
        for (uint32_t x = 0; x < w; ++x)
          if (!t[x].full && row[x].full) t[x] = row[x], row[x].full = 0;  // phase 1: take
        for (uint32_t x = 0; x < w; ++x)
          if (t[x].full && !row[x + 1].full) row[x + 1] = t[x], t[x].full = 0;  // phase 2: forward
        if (row[w].full) row[w].full = 0, ++delivered;  // the east edge drains
      }
      benchmark::ClobberMemory();
    }
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (secs < min_seconds);
  benchmark::DoNotOptimize(delivered);
  return double(w) * double(h) * double(cycles) / secs;
}

}  // namespace wse::bench
