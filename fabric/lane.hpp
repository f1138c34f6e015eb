#pragma once
// A lane: one colour's input buffer at one router. Each colour has its own buffer and its own
// credits toward each tx target, so a colour that is stalled never blocks another.
#include <cstdint>

#include "fabric/geometry.hpp"
#include "fabric/machine_spec.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

struct LaneCounters {
  uint64_t wavelets = 0;             // wavelets that left this lane (all tx copies done)
  uint64_t backpressure_cycles = 0;  // cycles the head waited for a credit
};

struct Lane {
  static constexpr uint32_t kSlots = MachineSpec::kMaxDepth + MachineSpec::kMaxLatency + 1;

  Colour colour = 0;
  Dir rx = Dir::Ramp;
  uint8_t tx = 0;        // route tx set
  uint8_t pending = 0;   // tx targets the head wavelet has not reached yet
  uint8_t head = 0, count = 0, cap = 0;
  uint8_t credits[kDirs] = {};
  uint32_t slots[kSlots] = {};
  LaneCounters counters;

  bool empty() const { return count == 0; }
  uint32_t front() const { return slots[head]; }
  // Both return true when a new head wavelet appears (it wants every tx target).
  bool push(uint32_t payload) {
    slots[(head + count) % kSlots] = payload;
    if (count++) return false;
    pending = tx;
    return true;
  }
  bool pop() {
    head = uint8_t((head + 1) % kSlots);
    if (!--count) return false;
    pending = tx;
    return true;
  }
};

}  // namespace wse
