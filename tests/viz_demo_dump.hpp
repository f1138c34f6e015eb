#pragma once
// A synthetic activity dump, built in memory, for the viz tests and the headless-browser viewer
// test: a few PE metrics with easy-to-check patterns (a busy front moving east over the
// intervals, SRAM filling towards the south-east) and one link metric.
#include <cstdint>

#include "tools/dump_view.hpp"

namespace wse::testing {

inline DumpView demo_dump(uint32_t width = 48, uint32_t height = 32, uint32_t intervals = 8, uint64_t every = 1000) {
  DumpView d;
  d.width = width;
  d.height = height;
  d.machine = "wse2";
  d.layer = "demo";
  d.pass = "fwd";
  d.interval_cycles = every;
  d.cycles = every * intervals - every / 2;  // the last interval is a short one
  for (uint32_t i = 0; i < intervals; ++i) d.interval_starts.push_back(uint64_t(i) * every);
  const size_t cells = size_t(width) * height;
  MetricGrid fmac{"fmac_cycles", "cycles", {}}, sram{"sram_bytes", "bytes", {}}, in{"wavelets_in", "wavelets", {}},
      stall{"stall_backpressure_cycles", "cycles", {}};
  for (uint32_t i = 0; i < intervals; ++i) {
    std::vector<uint32_t> f(cells), s(cells), w(cells), b(cells);
    const uint32_t front = intervals > 1 ? i * (width - 1) / (intervals - 1) : 0;
    for (uint32_t y = 0; y < height; ++y)
      for (uint32_t x = 0; x < width; ++x) {
        const size_t k = size_t(y) * width + x;
        const uint32_t dist = x > front ? x - front : front - x;
        f[k] = dist < 6 ? uint32_t(900 - dist * 150 + (y % 4) * 10) : uint32_t((x * 7 + y * 3) % 40);
        s[k] = 1024 + 64 * (x + y) + 128 * i;
        w[k] = f[k] / 30 + y;
        b[k] = (x == front && y % 8 == 3) ? 400 : 0;
      }
    fmac.frames.push_back(std::move(f));
    sram.frames.push_back(std::move(s));
    in.frames.push_back(std::move(w));
    stall.frames.push_back(std::move(b));
  }
  d.pe_metrics = {fmac, sram, in, stall};
  // One east link per tile but the last column.
  MetricGrid link{"wavelets", "wavelets", {}};
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x + 1 < width; ++x) d.links.push_back({x, y, 1});
  for (uint32_t i = 0; i < intervals; ++i) {
    std::vector<uint32_t> v(d.links.size());
    for (size_t l = 0; l < d.links.size(); ++l) v[l] = d.links[l].y == height / 2 ? 800 : d.links[l].x + i;
    link.frames.push_back(std::move(v));
  }
  d.link_metrics = {link};
  return d;
}

}  // namespace wse::testing
