#pragma once
// What one PE did, by cycle class. Idle cycles are the rest of the run.
#include <cstdint>

namespace wse {

struct PeCounters {
  uint64_t receive_cycles = 0;  // one per data task activation (dequeuing its wavelet)
  uint64_t fmac_cycles = 0;     // fmac / axpy
  uint64_t move_cycles = 0;     // add, mov
  uint64_t send_cycles = 0;     // one per wavelet put onto the RAMP
  uint64_t stall_send_cycles = 0;  // a send waited for a credit (backpressure)
  uint64_t tasks = 0;
  uint64_t wavelets_in = 0, wavelets_out = 0;
  uint64_t macs = 0;

  uint64_t busy_cycles() const { return receive_cycles + fmac_cycles + move_cycles + send_cycles; }
  PeCounters& operator+=(const PeCounters& o) {
    receive_cycles += o.receive_cycles, fmac_cycles += o.fmac_cycles, move_cycles += o.move_cycles;
    send_cycles += o.send_cycles, stall_send_cycles += o.stall_send_cycles, tasks += o.tasks;
    wavelets_in += o.wavelets_in, wavelets_out += o.wavelets_out, macs += o.macs;
    return *this;
  }
};

}  // namespace wse
