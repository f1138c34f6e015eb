#pragma once
// What a router can do with a colour beyond its static route: switch positions, counter filters
// and the switch commands control wavelets carry. Behaviour follows what was measured on the
// Cerebras simulator (public repository spcl/spada, irspec/docs/spatial/routing_wse.md):
//
// - A colour may hold up to `switch_positions` routes (position 0 is the base route). A position
//   names a new rx, a new tx set, or both (WSE-3 only; on WSE-2 a position names one side and the
//   other keeps its current value). Advancing past the last position is a no-op, unless the
//   switch is in ring mode, where it wraps to position 0.
// - A control wavelet is forwarded by the position its router holds when it arrives, stops at
//   the first router whose tx includes RAMP (delivered to that PE, which does not read it as
//   data), and every switch-configured router it passes applies its command once it has left.
// - `.advance_switch` on an output DSD marks its last data wavelet: the sender's own router
//   advances once it has forwarded that wavelet (the wavelet travels on as plain data).
// - A counter filter decides which data wavelets of a colour a router hands to its PE: the counter
//   starts at init_counter, counts every data wavelet the colour's route (in its current switch
//   position) sends toward the RAMP, wraps to zero after limit1, and the wavelet goes to the RAMP
//   iff the counter is at most max_counter. Wavelets of a position without the RAMP, and control
//   wavelets, are not counted and not filtered.
#include <array>
#include <cstdint>
#include <string>

#include "fabric/geometry.hpp"
#include "core/errors.hpp"
#include "core/machine_spec.hpp"

namespace wse {

struct SwitchPosition {
  bool has_rx = false, has_tx = false;
  Dir rx = Dir::Ramp;
  uint8_t tx = 0;  // bit set of Dir

  static SwitchPosition receive(Dir rx) { return {true, false, rx, 0}; }
  static SwitchPosition transmit(std::initializer_list<Dir> txs) {
    SwitchPosition p{false, true, Dir::Ramp, 0};
    for (Dir d : txs) p.tx |= bit(d);
    return p;
  }
  static SwitchPosition both(Dir rx, std::initializer_list<Dir> txs) {
    SwitchPosition p = transmit(txs);
    p.has_rx = true, p.rx = rx;
    return p;
  }
};

// Positions 1.. of a colour's switch (position 0 is the colour's route, set with set_route).
struct ColourSwitchConfig {
  std::array<SwitchPosition, MachineSpec::kMaxSwitchPositions> positions{};
  uint8_t count = 0;  // positions beyond the base route
  bool ring_mode = false;

  ColourSwitchConfig& then(SwitchPosition p) {
    if (count < positions.size()) positions[count] = p;
    ++count;
    return *this;
  }
};

struct CounterFilter {
  uint32_t init_counter = 0;
  uint32_t limit1 = 0;       // the counter wraps to 0 after this value
  uint32_t max_counter = 0;  // pass to the RAMP iff counter <= max_counter
  // The window of `words` wavelets starting at position `first` of every `period` wavelets (it may
  // wrap past the period's end). A window of none or of every wavelet is no filter (a route
  // elsewhere, or none), and a position past the period names nothing: each is a RouteError, where
  // the arithmetic below would wrap into a filter passing every wavelet (or divide by zero).
  static CounterFilter window(uint32_t first, uint32_t words, uint32_t period) {
    auto refuse = [&](const std::string& why) {
      throw RouteError("CounterFilter::window(first " + std::to_string(first) + ", words " + std::to_string(words) + ", period " +
                       std::to_string(period) + "): " + why);
    };
    if (period == 0) refuse("the period must be at least 1 wavelet");
    if (first >= period) refuse("first must lie inside the period (0 to " + std::to_string(period - 1) + ")");
    if (words == 0) refuse("a window of no wavelets (route the colour elsewhere, or not to this PE)");
    if (words >= period) refuse(std::string("a window of ") + (words == period ? "every wavelet: leave the filter out" : "more wavelets than the period"));
    return {(period - first) % period, period - 1, words - 1};
  }
};

// Switch commands (the encoding of the CSL <control> library's single payload: a tag bit, the
// opcode at bits 22-23, the CE-ignore bit at 24, 16 bits of data below).
enum class SwitchCommand : uint8_t { Nop = 0, Advance = 1, Reset = 2, Teardown = 3 };

inline uint32_t control_payload(SwitchCommand cmd, bool ce_ignore = true, uint16_t data = 0) {
  const uint32_t hi = 1u | (uint32_t(cmd) << 6) | (uint32_t(ce_ignore) << 8);
  return (hi << 16) | data;
}
inline SwitchCommand control_command(uint32_t payload) { return SwitchCommand((payload >> 22) & 3); }

}  // namespace wse
