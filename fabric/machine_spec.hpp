#pragma once
// Every machine figure the emulator uses, in one value read once from a preset (machines/*.yaml)
// and passed down. docs/machine-spec.md says where each figure comes from.
#include <cstdint>
#include <string>

namespace wse {

struct MachineSpec {
  std::string name = "wse2";
  uint32_t fabric_width = 750;          // usable PE rectangle
  uint32_t fabric_height = 994;
  uint32_t sram_bytes_per_pe = 49152;   // 48 KB
  uint32_t sram_banks = 8;
  uint32_t colours = 24;                // routable colours
  uint32_t hop_latency_cycles = 2;      // router-to-router
  uint32_t ramp_latency_cycles = 1;     // router <-> own PE
  uint32_t wavelets_per_link_per_cycle = 1;
  uint32_t router_buffer_depth = 2;     // per colour, beyond the link pipeline; not public
  uint32_t pe_input_queue_depth = 4;    // per colour, beyond the ramp pipeline
  uint32_t fmac_simd_fp16 = 4;          // elements per cycle
  uint32_t fmac_simd_fp32 = 1;
  uint32_t move_simd_fp32 = 2;          // fp32 add / mov elements per cycle
  double clock_hz = 850e6;
  // Off-wafer I/O shared by all active edge ports, in bytes per fabric cycle
  // (CS-2: 1.2 Tb/s at 850 MHz ~ 176 B/cycle). 0 = every port runs at link rate.
  double io_bytes_per_cycle = 176.47;

  // Largest latency a link queue is sized for (see fabric/link.hpp).
  static constexpr uint32_t kMaxLatency = 15;
  static constexpr uint32_t kMaxColours = 32;
  static constexpr uint32_t kMaxDepth = 16;
};

}  // namespace wse
