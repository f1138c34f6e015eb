#pragma once
// One worker's agenda: which of its tiles must be stepped at which cycle. A timing wheel for the
// near future plus a heap for the far future; buckets keep their capacity, so steady-state
// scheduling never allocates. Tiles owned by another worker are never scheduled here: links
// that cross blocks are polled by their consumer (see cycle_engine.hpp) and the producer only
// notes the cycle so the engine's fast-forward cannot skip it.
#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

class Scheduler {
 public:
  static constexpr uint32_t kWheel = 1024;

  explicit Scheduler(size_t tiles = 0) : last_scheduled_(tiles, kNever), buckets_(kWheel) {}

  void reset(size_t tiles) {
    last_scheduled_.assign(tiles, kNever);
    for (auto& b : buckets_) b.clear();
    far_ = {};
    remote_ = kNever;
    now_ = 0;
    pending_ = 0;
  }

  Cycle now() const { return now_; }

  void schedule(TileId t, Cycle c) {
    if (last_scheduled_[t] == c) return;  // already due then
    last_scheduled_[t] = c;
    if (c - now_ < kWheel) {
      buckets_[c % kWheel].push_back(t);
      ++pending_;
    } else {
      far_.push({c, t});
    }
  }

  // A wavelet or credit sent to another worker's tile becomes visible at c.
  void note_remote(Cycle c) { remote_ = std::min(remote_, c); }

  // Tiles due at `now` (may repeat a tile; the engine skips repeats).
  std::vector<TileId>& advance_to(Cycle now) {
    now_ = now;
    remote_ = kNever;
    while (!far_.empty() && far_.top().first - now_ < kWheel) {
      auto [c, t] = far_.top();
      far_.pop();
      buckets_[c % kWheel].push_back(t);
      ++pending_;
    }
    return buckets_[now % kWheel];
  }
  void finish_bucket(std::vector<TileId>& b) {
    pending_ -= b.size();
    b.clear();
  }

  // Earliest cycle after now at which this worker has work, or a remote wavelet lands.
  Cycle next_event() const {
    Cycle best = remote_;
    if (pending_) {
      for (uint32_t k = 1; k < kWheel; ++k)
        if (!buckets_[(now_ + k) % kWheel].empty()) { best = std::min(best, now_ + k); break; }
    }
    if (!far_.empty()) best = std::min(best, far_.top().first);
    return best;
  }

 private:
  using Far = std::pair<Cycle, TileId>;
  std::vector<Cycle> last_scheduled_;
  std::vector<std::vector<TileId>> buckets_;
  std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
  Cycle remote_ = kNever;
  Cycle now_ = 0;
  size_t pending_ = 0;
};

}  // namespace wse
