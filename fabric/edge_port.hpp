#pragma once
// Ports on the mesh edge where the off-wafer world (MemoryX, the host) meets the fabric. The
// ingress ports that have a stream, and the egress ports that carry something in the run
// (EgressPort::set_carries), share the system's I/O bandwidth evenly; each port's share is a
// rational rate, so when its k-th wavelet may pass is a closed form of k and never depends on
// thread timing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fabric/geometry.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

// Rate as num/den wavelets per cycle (<= 1): the k-th wavelet (from 0) passes no earlier than
// start + ceil(k * den / num). The product is taken in 128 bits: den may be up to 2^62 (from()).
struct PortRate {
  uint64_t num = 1, den = 1;
  // The rate `wavelets_per_cycle` stands for (1 from 1 on): the ratio it was computed as, or the
  // largest rate not above it to 31 significant bits. A port never passes a wavelet before that
  // rate allows (one fed by a slow off-wafer link never gets ahead of the link's last byte; a
  // rounding to the nearest 2^-20 let it, by 3% to 46% of a step at 1e-4 to 1e-6 bytes a cycle).
  static PortRate from(double wavelets_per_cycle);
  Cycle slot(uint64_t k) const {
    if (den == 1 && num == 1) return k;
    const unsigned __int128 t = static_cast<unsigned __int128>(k) * den + (num - 1);
    return Cycle(t / num);
  }
};

// When a stream's words reach the wafer edge from off the wafer (the off-wafer link's pace, as
// the sender's messages say): the first `head_words` from `head_first` on, the rest from
// `tail_first` on, both at `rate`. Without one, every word is there at the port's start.
//
// A word is there in the cycle its last byte arrives: the first byte arrives in cycle `first`,
// so the k-th word (from 0), complete (k + 1) / rate cycles later, is there in cycle
// first + ceil((k + 1) / rate) - 1. At a rate of a word a cycle or more that is first + k; at a
// slower one the last word is there in the cycle the message's last byte arrives (it was
// taken a word's time early, at first + ceil(k / rate): 16 M cycles early a pass on a
// 1e-6-byte-a-cycle MemoryX link).
struct EdgeArrival {
  Cycle head_first = 0;
  uint64_t head_words = 0;
  Cycle tail_first = 0;
  PortRate rate;
  Cycle at(uint64_t k) const {
    return k < head_words ? head_first + rate.slot(k + 1) - 1 : tail_first + rate.slot(k - head_words + 1) - 1;
  }
};

// Ports are kept side by side (Mesh's deques) and each is written by the worker that steps its
// tile: cache-line aligned, so two workers' ports never share a line.
class alignas(64) IngressPort {
 public:
  IngressPort(Coord tile, Dir side) : tile_(tile), side_(side) {}
  Coord tile() const { return tile_; }
  Dir side() const { return side_; }

  void set_rate(PortRate r) { rate_ = r; }
  void set_start(Cycle c) { start_ = c; }
  // A new stream for a later run: forget the old one; its first wavelet may enter at `start`.
  void restart(Cycle start) {
    stream_.clear();
    next_ = 0;
    start_ = start;
    last_entry_ = kNever;
    has_arrival_ = false;
  }
  // The stream arrives over time rather than being there at the start (see EdgeArrival).
  void set_arrival(const EdgeArrival& a) {
    arrival_ = a;
    has_arrival_ = true;
  }
  void enqueue(Wavelet w) { stream_.push_back(w); }
  void enqueue(const std::vector<Wavelet>& ws) { stream_.insert(stream_.end(), ws.begin(), ws.end()); }

  bool drained() const { return next_ == stream_.size(); }
  // Cycle at which the next wavelet may enter the edge router; kNever when drained.
  Cycle next_ready() const { return drained() ? kNever : ready(next_); }
  Cycle start() const { return start_; }
  // When the last wavelet entered (kNever before any), and when it would have at the port's rate
  // alone: the difference is how long backpressure held the stream back.
  Cycle last_entry() const { return last_entry_; }
  Cycle ideal_last_entry() const { return stream_.empty() ? start_ : ready(stream_.size() - 1); }
  // The last wavelet entered the moment it reached the edge, later than the port's own pace
  // allowed: the stream's arrival, not the wafer, set the end of the stream.
  bool arrival_bound() const {
    if (!has_arrival_ || stream_.empty() || !drained()) return false;
    const uint64_t k = stream_.size() - 1;
    return last_entry_ == arrival_.at(k) && arrival_.at(k) > start_ + rate_.slot(k);
  }
  // When the k-th wavelet may enter: the port's share of the I/O, and when it reached the edge.
  Cycle ready(uint64_t k) const {
    const Cycle own = start_ + rate_.slot(k);
    return has_arrival_ ? std::max(own, arrival_.at(k)) : own;
  }
  const Wavelet& peek() const { return stream_[next_]; }
  const Wavelet& wavelet(uint64_t k) const { return stream_[k]; }
  void pop(Cycle now) {
    ++next_;
    last_entry_ = now;
  }
  uint64_t sent() const { return next_; }
  uint64_t size() const { return stream_.size(); }

 private:
  Coord tile_;
  Dir side_;
  PortRate rate_;
  Cycle start_ = 0;
  EdgeArrival arrival_;
  bool has_arrival_ = false;
  std::vector<Wavelet> stream_;
  size_t next_ = 0;
  Cycle last_entry_ = kNever;
};

struct EgressArrival {
  Cycle cycle;
  Wavelet wavelet;
};

class alignas(64) EgressPort {  // aligned as IngressPort is
 public:
  EgressPort(Coord tile, Dir side) : tile_(tile), side_(side) {}
  Coord tile() const { return tile_; }
  Dir side() const { return side_; }
  void set_rate(PortRate r) { rate_ = r; }
  // Whether the next run sends anything out through it (the kernel knows: an FC layer's dW ports
  // in a backward pass, its loss ports in the last layer's forward pass). One that does not takes
  // no share of the edge's egress rate (Mesh::share_io_bandwidth); by default every port does.
  void set_carries(bool carries) { carries_ = carries; }
  bool carries() const { return carries_; }
  void reserve(size_t n) { received_.reserve(n); }
  // Forget what was received; slots count again from `start`.
  void restart(Cycle start) {
    received_.clear();
    start_ = start;
    next_slot_ = start;
  }

  // The port's link off the wafer carries a wavelet for den / num cycles: the k-th wavelet
  // starts when the (k-1)-th has left, or when it reaches the port, whichever is later, and
  // passes in the cycle it starts in (the ceiling of its start). Under steady pressure that is
  // start + ceil(k * den / num), the closed form; a port left idle banks nothing. (Until the
  // forty-fifth round the slot was that closed form of k alone, so a port that had waited for
  // its wavelets sent the late ones back to back, at a wavelet a cycle: GEMV at 1 byte a cycle
  // of I/O ended in 5,274 cycles, its 1,000 outputs alone needing 4,000 at the egress share.)
  // (Kept, not derived from next_free_ when asked: the router asks every cycle it has a wavelet
  // for the port, and a 128-bit division there cost more than the hop.)
  Cycle next_slot() const { return next_slot_; }
  bool can_accept(Cycle now) const { return next_slot_ <= now; }
  // A wavelet passes in cycle `now` (can_accept(now)) and reaches the far end at `arrival`. It
  // holds the link until the port can take the next (next_slot()): returns those cycles beyond
  // the one of its pass (0 at link rate), the link's extra hold (LinkCounters).
  uint64_t accept(Cycle now, Cycle arrival, Wavelet w) {
    // Its start, in 1/num cycles: when the link became free, if that was within this cycle (it
    // had waited for the link: the closed form's fraction kept), else now (the link had waited
    // for it).
    const unsigned __int128 start = next_slot_ == now ? (received_.empty() ? static_cast<unsigned __int128>(start_) * rate_.num : next_free_)
                                                      : static_cast<unsigned __int128>(now) * rate_.num;
    next_free_ = start + rate_.den;
    next_slot_ = rate_.num == 1 ? Cycle(next_free_) : Cycle((next_free_ + (rate_.num - 1)) / rate_.num);  // (link rate: no division)
    received_.push_back({arrival, w});
    return next_slot_ - now - 1;
  }
  const std::vector<EgressArrival>& received() const { return received_; }

 private:
  Coord tile_;
  Dir side_;
  PortRate rate_;
  Cycle start_ = 0;
  bool carries_ = true;
  unsigned __int128 next_free_ = 0;  // when the link is free for the next wavelet, in 1/num cycles
  Cycle next_slot_ = 0;              // the cycle that is in: the ceiling of next_free_ / num
  std::vector<EgressArrival> received_;
};

inline PortRate PortRate::from(double wavelets_per_cycle) {
  if (!(wavelets_per_cycle < 1.0)) return {1, 1};
  const double r = wavelets_per_cycle;
  constexpr uint64_t kMaxDen = uint64_t(1) << 40;
  // A rate meant as a ratio (1/37, a link's 44.1 wavelets a cycle over 750 ports) reaches here
  // as a double a few roundings off it: the continued fraction's first convergent within 2^-48
  // of it (relative), with a denominator below 2^40, is that ratio, exactly. (The k-th
  // wavelet's slot is then exact to within 2^-48 of its cycle: under a cycle for any run
  // shorter than 2^48 cycles.)
  if (r > 0) {
    long double x = r;
    uint64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;  // the two convergents before
    for (int i = 0; i < 64; ++i) {
      const long double a = std::floor(x);
      if (a >= static_cast<long double>(kMaxDen)) break;
      const auto ai = static_cast<uint64_t>(a);
      const unsigned __int128 q2 = static_cast<unsigned __int128>(ai) * q1 + q0;
      const unsigned __int128 p2 = static_cast<unsigned __int128>(ai) * p1 + p0;
      if (q2 >= kMaxDen) break;
      p0 = p1, q0 = q1, p1 = uint64_t(p2), q1 = uint64_t(q2);
      if (p1 && std::fabs(static_cast<long double>(p1) / static_cast<long double>(q1) - static_cast<long double>(r)) <= std::ldexp(static_cast<long double>(r), -48))
        return {p1, q1};
      const long double f = x - a;
      if (f <= 0) break;
      x = 1 / f;
    }
  }
  // Otherwise the largest rate not above it with a 31-bit numerator: den = 2^s with num =
  // floor(rate * 2^s) in [2^30, 2^31) where s <= 62 allows, so never faster than the rate.
  int e = 0;
  std::frexp(r, &e);  // r = m * 2^e, m in [0.5, 1)
  const int s = std::clamp(31 - e, 1, 62);
  const auto num = uint64_t(std::ldexp(r, s));  // exact scaling, then floor
  return {num ? num : 1, uint64_t(1) << s};
}

}  // namespace wse
