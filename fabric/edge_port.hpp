#pragma once
// Ports on the mesh edge where the off-wafer world (MemoryX, the host) meets the fabric. The
// ingress ports that carry data, and all egress ports, share the system's I/O bandwidth evenly; each port's share is a
// rational rate, so when its k-th wavelet may pass is a closed form of k and never depends on
// thread timing.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fabric/geometry.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

// Rate as num/den wavelets per cycle (<= 1): the k-th wavelet (from 0) passes no earlier than
// start + ceil(k * den / num).
struct PortRate {
  uint64_t num = 1, den = 1;
  static PortRate from(double wavelets_per_cycle);
  Cycle slot(uint64_t k) const { return (k * den + num - 1) / num; }
};

// When a stream's words reach the wafer edge from off the wafer (the off-wafer link's pace, as
// the sender's messages say): the first `head_words` from `head_first` on, the rest from
// `tail_first` on, both at `rate`. Without one, every word is there at the port's start.
struct EdgeArrival {
  Cycle head_first = 0;
  uint64_t head_words = 0;
  Cycle tail_first = 0;
  PortRate rate;
  Cycle at(uint64_t k) const { return k < head_words ? head_first + rate.slot(k) : tail_first + rate.slot(k - head_words); }
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
  void reserve(size_t n) { received_.reserve(n); }
  // Forget what was received; slots count again from `start`.
  void restart(Cycle start) {
    received_.clear();
    start_ = start;
  }

  Cycle next_slot() const { return start_ + rate_.slot(received_.size()); }
  bool can_accept(Cycle now) const { return next_slot() <= now; }
  void accept(Cycle arrival, Wavelet w) { received_.push_back({arrival, w}); }
  const std::vector<EgressArrival>& received() const { return received_; }

 private:
  Coord tile_;
  Dir side_;
  PortRate rate_;
  Cycle start_ = 0;
  std::vector<EgressArrival> received_;
};

inline PortRate PortRate::from(double wavelets_per_cycle) {
  if (!(wavelets_per_cycle < 1.0)) return {1, 1};
  constexpr uint64_t den = uint64_t(1) << 20;
  uint64_t num = uint64_t(wavelets_per_cycle * double(den) + 0.5);
  return {num ? num : 1, den};
}

}  // namespace wse
