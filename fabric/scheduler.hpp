#pragma once
// One worker's agenda: which of its tiles must be stepped at which cycle. A timing wheel for the
// near future plus a heap for the far future; buckets keep their capacity, so steady-state
// scheduling never allocates. Waking a tile another worker owns posts it to that worker's
// mailbox (a Boost.Lockfree SPSC queue per ordered pair of workers), which the owner drains at
// the start of its next cycle; the cycle is also noted so fast-forward cannot skip it.
#include <boost/lockfree/spsc_queue.hpp>
#include <algorithm>
#include <cstdint>
#include <queue>
#include <stdexcept>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

struct Wake {
  TileId tile = 0;
  Cycle cycle = 0;
};
using Mailbox = boost::lockfree::spsc_queue<Wake>;

class Scheduler {
 public:
  static constexpr uint32_t kWheel = 1024;

  explicit Scheduler(size_t tiles) : last_scheduled_(tiles, kNever), buckets_(kWheel) {}

  // Multi-worker runs: which worker owns each tile, who this is, and the mailbox toward each worker.
  void connect(const uint16_t* owner, uint16_t me, std::vector<Mailbox*> outbox, std::vector<Mailbox*> inbox) {
    owner_ = owner, me_ = me, outbox_ = std::move(outbox), inbox_ = std::move(inbox);
  }

  Cycle now() const { return now_; }
  // Before the first cycle of a run that does not start at 0.
  void start_at(Cycle c) { now_ = c; }

  void schedule(TileId t, Cycle c) {
    if (owner_ && owner_[t] != me_) {
      if (!outbox_[owner_[t]]->push({t, c})) throw std::logic_error("scheduler mailbox overflow");
      remote_ = std::min(remote_, c);
      return;
    }
    if (last_scheduled_[t] == c) return;  // already due then
    last_scheduled_[t] = c;
    if (c - now_ < kWheel) {
      buckets_[c % kWheel].push_back(t);
      ++pending_;
    } else {
      far_.push({c, t});
    }
  }

  // Tiles due at `now`, including those other workers woke (may repeat a tile; the engine skips
  // repeats). Everything posted before this cycle is in the mailboxes by now (the barrier).
  std::vector<TileId>& advance_to(Cycle now) {
    now_ = now;
    remote_ = kNever;
    while (!far_.empty() && far_.top().first - now_ < kWheel) {
      auto [c, t] = far_.top();
      far_.pop();
      buckets_[c % kWheel].push_back(t);
      ++pending_;
    }
    for (Mailbox* in : inbox_)
      in->consume_all([this](const Wake& w) { schedule(w.tile, std::max(w.cycle, now_)); });
    return buckets_[now % kWheel];
  }
  void finish_bucket(std::vector<TileId>& b) {
    pending_ -= b.size();
    b.clear();
  }

  // Earliest cycle after now at which this worker has work, or another worker's tile was woken.
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
  const uint16_t* owner_ = nullptr;
  uint16_t me_ = 0;
  std::vector<Mailbox*> outbox_, inbox_;
  Cycle remote_ = kNever;
  Cycle now_ = 0;
  size_t pending_ = 0;
};

}  // namespace wse
