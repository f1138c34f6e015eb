#pragma once
// The saturated row's rules and nothing else: a second reference point between the bare loop
// (bare_loop.hpp) and the engine. The same run as BM_SaturatedRow's, cycle for cycle: an ingress
// port at link rate into the first router's lane, W routers that each move a colour west to east,
// an egress port at the east edge. What the engine's hop keeps is kept here, written for this one
// row: wavelets on a link as a ring of entries stamped with their arrival cycle; a lane with a
// buffer and credits toward its output, each credit handed straight back to the upstream lane
// when a wavelet leaves; a wavelet that meets an empty lane with a credit goes on at once (a
// pass-through), any other waits in the lane; only the tiles woken for a cycle are stepped, from a
// bitmap of the next cycle; a count of wavelets per link and per lane. What it leaves out is the
// engine's generality: a lane per colour found from the wavelet, routes with several outputs and
// their arbitration, switches and filters, control wavelets, PEs, RAMP links, ports on any side,
// sleep and backpressure accounting, several workers, wakes beyond the next cycle.
//
// So the engine's row over this row is what its generality costs a hop, and this row over the bare
// loop is what the rules themselves cost: it shows how much of the bare-loop ceiling an engine of
// these rules could reach on this host at all (docs/performance.md, "Where it stands").
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace wse::bench {

class LeanRow {
 public:
  // W routers; K wavelets, payloads 0 .. K-1; `depth` slots per lane (credits toward the next).
  LeanRow(uint32_t width, uint64_t wavelets, uint32_t depth = 2)
      : w_(width), k_(wavelets), depth_(depth), tiles_(width) {
    if (width == 0 || width > 4096 || depth == 0 || depth > kSlots)
      throw std::invalid_argument("LeanRow: 1 <= width <= 4096 (one summary word), 1 <= depth <= 4");
    for (Tile& t : tiles_) t.credits = uint8_t(depth);  // toward the next lane (the egress takes one a cycle)
    for (auto& b : bitmap_) b.assign((width + 63) / 64, 0);
    received_.reserve(wavelets);
  }

  // Runs to the end; returns the run's length as the engine counts it (WaferRun::cycles): its
  // last event, a step or an arrival at the egress, + 1.
  [[gnu::noinline]] uint64_t run() {  // (out of line: scripts/hop_cost.sh counts it by name)
    uint64_t now = 0, last = 0;
    int cur = 0;
    mark(cur, 0);
    for (;; ++now) {
      const int next = cur ^ 1;
      uint64_t summary = std::exchange(summary_[cur], 0);
      if (!summary) break;
      last = now;
      for (; summary; summary &= summary - 1) {
        const auto word = uint32_t(std::countr_zero(summary));
        for (uint64_t bits = std::exchange(bitmap_[cur][word], 0); bits; bits &= bits - 1)
          step(word * 64 + uint32_t(std::countr_zero(bits)), now, next);
      }
      cur = next;
    }
    return std::max(last, received_.empty() ? uint64_t{0} : received_.back().arrival) + 1;
  }

  // Empty when every wavelet reached the egress, in order, the last at (K-1) + W (a cycle a hop:
  // W-1 links between routers and the egress link), as check_row() asks of the engine's row.
  std::string check() const {
    if (received_.size() != k_) return "lean row: egress received " + std::to_string(received_.size()) + " of " + std::to_string(k_);
    for (uint64_t i = 0; i < k_; ++i)
      if (received_[i].payload != uint32_t(i)) return "lean row: wavelet " + std::to_string(i) + " arrived out of order";
    if (k_ && received_.back().arrival != (k_ - 1) + w_)
      return "lean row: last wavelet arrived at cycle " + std::to_string(received_.back().arrival) + ", expected " +
             std::to_string((k_ - 1) + w_);
    for (uint32_t x = 0; x < w_; ++x)
      if (tiles_[x].lane_wavelets != k_ || tiles_[x].link_wavelets != k_) return "lean row: router " + std::to_string(x) + " counted wrong";
    return {};
  }

 private:
  static constexpr uint32_t kSlots = 4;
  struct Flit {
    uint64_t arrival = 0;
    uint32_t payload = 0;
    uint8_t colour = 0, flags = 0;
  };
  // One router with its east link (the ring its wavelets go out on, which the next router reads).
  struct alignas(64) Tile {
    Flit ring[2];            // the east link: a wavelet a cycle, so two entries are enough
    uint32_t tail = 0;       // pushes onto the east link
    uint32_t in_head = 0;    // where this router reads its west link (the previous tile's ring)
    uint8_t colour = 0, count = 0, head = 0, credits = 0;
    uint32_t slots[kSlots] = {};
    uint64_t link_wavelets = 0, lane_wavelets = 0;
  };

  void mark(int b, uint32_t t) {
    bitmap_[b][t >> 6] |= uint64_t(1) << (t & 63);
    summary_[b] |= uint64_t(1) << (t >> 6);  // (a row of up to 4096 routers: one summary word)
  }

  void step(uint32_t x, uint64_t now, int next) {
    Tile& me = tiles_[x];
    if (x == 0) {
      // The ingress port at link rate: a wavelet a cycle into the lane while it has room.
      if (fed_ < k_ && me.count < depth_) push(me, uint32_t(fed_++));
      if (fed_ < k_) mark(next, 0);
    } else if (const Tile& up = tiles_[x - 1]; me.in_head != up.tail) {
      const Flit& f = up.ring[me.in_head & 1];
      if (f.arrival <= now) {
        if (f.colour != me.colour || f.flags) throw std::logic_error("lean row: a wavelet of another colour");
        const uint32_t payload = f.payload;
        ++me.in_head;
        if (me.count == 0 && (me.credits || x + 1 == w_)) return pass(x, payload, now, next);
        push(me, payload);
      }
    }
    if (me.count && (me.credits || x + 1 == w_)) {
      const uint32_t payload = me.slots[me.head];
      me.head = uint8_t((me.head + 1) % kSlots), --me.count;
      pass(x, payload, now, next);
      if (me.count) mark(next, x);
    }
  }
  void push(Tile& me, uint32_t payload) { me.slots[(me.head + me.count++) % kSlots] = payload; }
  // A wavelet leaves router x's lane (or passes through it) on its east link; its slot's credit
  // goes straight back to the router before it, which sees it next cycle.
  void pass(uint32_t x, uint32_t payload, uint64_t now, int next) {
    Tile& me = tiles_[x];
    ++me.lane_wavelets, ++me.link_wavelets;
    if (x + 1 == w_) {
      received_.push_back({now + 1, payload, me.colour, 0});  // the egress (reserved: no allocation)
    } else {
      // Two entries: the next router reads each wavelet in the cycle it arrives.
      if (me.tail - tiles_[x + 1].in_head >= 2) throw std::logic_error("lean row: a link's ring overflowed");
      me.ring[me.tail & 1] = {now + 1, payload, me.colour, 0};
      ++me.tail, --me.credits;
      mark(next, x + 1);
    }
    if (x > 0) {
      ++tiles_[x - 1].credits;
      if (!(bitmap_[next][(x - 1) >> 6] >> ((x - 1) & 63) & 1)) mark(next, x - 1);
    }
  }

  uint32_t w_;
  uint64_t k_;
  uint32_t depth_;
  std::vector<Tile> tiles_;
  std::vector<uint64_t> bitmap_[2];
  uint64_t summary_[2] = {};
  uint64_t fed_ = 0;
  std::vector<Flit> received_;
};

// Wavelet hops per second of the lean row (W routers, K wavelets), run repeatedly for at least
// `min_seconds`; throws if a run does not check.
inline double lean_row_hops_per_second(uint32_t width, uint64_t wavelets, double min_seconds = 0.1) {
  double secs = 0, hops = 0;
  do {
    LeanRow row(width, wavelets);
    const auto t0 = std::chrono::steady_clock::now();
    row.run();
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (std::string err = row.check(); !err.empty()) throw std::logic_error(err);
    hops += double(width) * double(wavelets);
  } while (secs < min_seconds);
  return hops / secs;
}

}  // namespace wse::bench
