#pragma once
// What one PE did, by cycle class. The datapath runs one thing per cycle (receive, fmac or move),
// so busy = receive + fmac + move never exceeds the cycles elapsed; sends leave through the output
// queues beside it. Idle cycles are the rest of the run.
#include <cstdint>

namespace wse {

struct PeCounters {
  uint64_t receive_cycles = 0;  // per data task activation, MachineSpec::data_task_receive_cycles (dequeuing its wavelet)
  uint64_t fmac_cycles = 0;     // datapath cycles of multiply ops (@fmacs @fmach @fmachs @fmuls ...)
  uint64_t move_cycles = 0;     // datapath cycles of the other ops (add, mov, max, ...); a fabric op's setup is not counted
  uint64_t send_cycles = 0;     // one per wavelet put onto the RAMP
  uint64_t stall_send_cycles = 0;  // the datapath idle while an op waited for room in an output queue
  // Cycles with no datapath work (no element moved, no task or memory op computing) and no op
  // waiting for room, while an op's fabric DSDs are set up (MachineSpec::fabric_dsd_setup_cycles
  // before its first element): not input wait.
  uint64_t setup_cycles = 0;
  uint64_t tasks = 0;
  uint64_t dsd_ops = 0;         // DSD operations started
  uint64_t wavelets_in = 0, wavelets_out = 0;
  uint64_t macs = 0;

  uint64_t busy_cycles() const { return receive_cycles + fmac_cycles + move_cycles; }
  PeCounters& operator+=(const PeCounters& o) {
    receive_cycles += o.receive_cycles, fmac_cycles += o.fmac_cycles, move_cycles += o.move_cycles;
    send_cycles += o.send_cycles, stall_send_cycles += o.stall_send_cycles, setup_cycles += o.setup_cycles, tasks += o.tasks,
        dsd_ops += o.dsd_ops;
    wavelets_in += o.wavelets_in, wavelets_out += o.wavelets_out, macs += o.macs;
    return *this;
  }
};

}  // namespace wse
