#pragma once
// The wall time a set of host intervals covers: the length of their union. Wafers run side by
// side on their own threads, so the wall seconds their cycle-level runs took together is this, not
// the sum of each run's seconds (Cluster::engine_seconds, a training report's engine_seconds).
#include <algorithm>
#include <utility>
#include <vector>

namespace wse {

// Each interval is [start, end) in seconds of one clock; empty or reversed ones cover nothing.
inline double covered_seconds(std::vector<std::pair<double, double>> runs) {
  std::sort(runs.begin(), runs.end());
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (const auto& [a, b] : runs) {
    if (b <= a) continue;
    if (open && a <= end) {
      end = std::max(end, b);
      continue;
    }
    if (open) total += end - start;
    start = a, end = b, open = true;
  }
  if (open) total += end - start;
  return total;
}

}  // namespace wse
