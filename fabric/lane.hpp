#pragma once
// A lane: one colour's input buffer at one router. Each colour has its own buffer and its own
// credits toward each tx target, so a colour that is stalled never blocks another.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fabric/geometry.hpp"
#include "core/machine_spec.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

struct Link;

struct LaneCounters {
  uint64_t wavelets = 0;             // wavelets that left this lane (all tx copies done)
  uint64_t backpressure_cycles = 0;  // cycles the head waited for a credit
};

// Aligned to a cache line, with what a router's step touches first: a plain lane's ring wraps at
// its capacity (a few slots), so its step stays within one line; only a lane with switch or
// filter state, which may take in held wavelets beyond its capacity, wraps at kSlots.
struct alignas(64) Lane {
  static constexpr uint32_t kSlots = MachineSpec::kMaxDepth + MachineSpec::kMaxLatency + 1;
  static_assert(kSlots <= 32, "slot flags are kept in 32-bit masks");

  Colour colour = 0;
  Dir rx = Dir::Ramp;
  uint8_t tx = 0;        // route tx set (the current switch position's)
  uint8_t pending = 0;   // tx targets the head wavelet has not reached yet
  uint8_t head = 0, count = 0;
  // Two flags (Mesh::derive_lanes). kLateBack: a plain lane whose credits go back late, into its
  // upstream router's Router::late_ (Router::kLateNote), where no credit_back can be had. kPassHere:
  // set with sole_out and either way back (credit_back or kLateBack), where the sole link's
  // dst_next holds, so that a pass-through's wake and its credit make no call, and
  // Router::ingest_hop() (ingest_late() for a late one) makes it itself: one test there, and no
  // load through sole_link for it. Beside count, so that "empty, and a pass-through may be made
  // here" is one 16-bit compare (pass_word(): two instructions a hop fewer, fiftieth round).
  uint8_t pass_here = 0;
  static constexpr uint8_t kPassHere = 1, kLateBack = 2;
  int8_t ext = -1;       // index of this lane's switch / filter state in Router::ext, -1 = a plain lane
  uint8_t credits[kDirs] = {};
  uint8_t ring = kSlots; // slots in use as the ring: cap for a plain lane, kSlots for one with ext
  uint8_t cap = 0;
  // 1 + the output this plain lane sends to alone: its route's only tx, a link that returns
  // credits, which no other lane of the router may use (Mesh::assign_notes); 0 otherwise. No
  // arbitration can then keep an arriving wavelet from it, so Router::ingest() may send the
  // wavelet on at once when the lane is empty and holds a credit (a pass-through).
  uint8_t sole_out = 0;
  // sole_out's output, when there is one. (Unsigned to the full width, so an index by it folds
  // the - 1 into the address: an int index took a subtraction and a sign extension.)
  size_t sole_dir() const { return size_t(sole_out) - 1; }
  // count and pass_here as one little-endian word: kEmptyPassHere when the lane is empty and a
  // pass-through may be made here, its credit straight back; kEmptyPassLate, its credit late.
  static constexpr uint16_t kEmptyPassHere = uint16_t(kPassHere) << 8;
  static constexpr uint16_t kEmptyPassLate = uint16_t(kPassHere | kLateBack) << 8;
  uint16_t pass_word() const {
    uint16_t w;
    std::memcpy(&w, &count, sizeof w);
    return w;
  }
  // A plain lane whose upstream router is stepped before this one in every cycle (Link::
  // credit_into): the credit count toward us of that router's lane, which a credit returned by
  // this lane goes straight into instead of through the link's queue.
  uint8_t* credit_back = nullptr;
  // With sole_out: that output's link, so a pass-through finds it from the lane it has loaded
  // already instead of through the router's port table (one dependent load less on a hop).
  Link* sole_link = nullptr;
  uint32_t control = 0;  // per slot: a control wavelet
  uint32_t advance = 0;  // per slot: advance this router's switch when the wavelet has left
  LaneCounters counters;
  uint32_t slots[kSlots] = {};

  bool empty() const { return count == 0; }
  uint32_t front() const { return slots[head]; }
  bool front_control() const { return control >> head & 1u; }
  bool front_advance() const { return advance >> head & 1u; }
  // Returns true when a new head wavelet appears (the router then decides where it goes).
  bool push(uint32_t payload, uint8_t flags = 0) {
    uint32_t at = head + count;
    if (at >= ring) at -= ring;
    slots[at] = payload;
    if (flags) {
      if (flags & kControl) control |= 1u << at;
      if (flags & kAdvanceSwitch) advance |= 1u << at;
    }
    return count++ == 0;
  }
  bool pop() {
    if (control | advance) control &= ~(1u << head), advance &= ~(1u << head);
    if (++head == ring) head = 0;
    return --count != 0;
  }
};
static_assert(offsetof(Lane, pass_here) == offsetof(Lane, count) + 1 && std::endian::native == std::endian::little,
              "Lane::pass_word() reads count and pass_here as one word");

}  // namespace wse
