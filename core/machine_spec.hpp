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
  uint32_t hop_latency_cycles = 1;      // router-to-router
  uint32_t ramp_latency_cycles = 2;     // router <-> own PE (T_R of the HPDC'24 reduce model)
  uint32_t wavelets_per_link_per_cycle = 1;
  uint32_t router_buffer_depth = 2;     // per colour, beyond the link pipeline; not public
  uint32_t pe_input_queue_depth = 4;    // per colour, beyond the ramp pipeline
  uint32_t fmac_simd_fp16 = 4;          // @fmach elements per cycle
  uint32_t fmac_simd_mixed = 2;         // @fmachs (fp16 x fp16 + fp32)
  uint32_t fmac_simd_fp32 = 1;          // @fmacs, @fmuls
  uint32_t move_simd_fp32 = 2;          // @fadds @fsubs @fmovs @fnegs
  uint32_t move_simd_fp16 = 4;          // @faddh @fmovh @fsubh @fnegh @fmulh (fp16 elementwise)
  uint32_t fmax_simd_fp16 = 1;          // @fmaxh
  uint32_t fmax_simd_fp32 = 1;          // @fmaxs
  uint32_t convert_simd = 1;            // @fh2s @fs2h

  // The PE's datapath and its threads.
  uint32_t dsd_pipeline_cycles = 1;     // an element read by a DSD op reaches the output queue this much later
  uint32_t fabric_dsd_setup_cycles = 44;  // an op with a fabric operand starts this long after it is issued
  uint32_t microthreads = 8;            // asynchronous DSD operations in flight at once
  uint32_t pe_input_queues = 8;         // colours a PE can receive on
  uint32_t pe_output_queues = 6;        // colours a PE can send on
  uint32_t pe_output_queue_depth = 2;   // 32-bit wavelets per output queue, beyond the pipeline
  uint32_t pe_filters = 3;              // counter filters a router can hold (memcpy's is not counted)
  uint32_t data_task_receive_cycles = 1;  // a data task's wavelet taken from its input queue, before the task runs
  uint32_t local_task_ids = 31;         // task IDs a PE's local tasks can take (WSE-2 0-30, WSE-3 8-30)
  bool data_task_ids_shared = true;     // WSE-2: a data task's ID is its colour, taken from those same IDs
  uint32_t fabric_inputs_per_op = 2;    // fabric sources a DSD op may read (WSE-3: one)

  // Router switches (several routes per colour, advanced at run time).
  uint32_t switch_positions = 4;        // per colour per router, the base route included
  bool switch_rx_and_tx = false;        // WSE-2: a position names an input or an output, never both

  double clock_hz = 850e6;
  // Off-wafer I/O shared by all active edge ports, in bytes per fabric cycle
  // (CS-2: 1.2 Tb/s at 850 MHz ~ 176 B/cycle). 0 = every port runs at link rate.
  double io_bytes_per_cycle = 176.47;

  // The cluster around the wafers (transaction-level actors, cluster/): rates in bytes per fabric
  // cycle, latencies in fabric cycles. Sources and assumptions: docs/machine-spec.md, "Cluster".
  double memoryx_bytes_per_cycle = 176.47;         // MemoryX streams weights at a CS-2's I/O rate
  double memoryx_update_bytes_per_cycle = 235.29;  // optimizer: weight, gradient, state bytes read + written
  uint32_t memoryx_latency_cycles = 850;           // MemoryX <-> the SwarmX root
  uint32_t swarmx_fanout = 4;                      // 1:4 broadcast-reduce nodes
  double swarmx_link_bytes_per_cycle = 176.47;     // per link down to a node or wafer (and up)
  uint32_t swarmx_latency_cycles = 850;            // per tree level
  uint64_t edge_buffer_bytes = 262144;             // of a stream the wafer edge holds before its pass starts
  double input_bytes_per_cycle = 176.47;           // an input worker into its wafer
  uint32_t input_latency_cycles = 850;             // input worker <-> wafer
  uint32_t user_node_latency_cycles = 850;         // user node <-> MemoryX, SwarmX root, input workers

  // Largest latency a link queue is sized for (see fabric/link.hpp).
  static constexpr uint32_t kMaxLatency = 15;
  static constexpr uint32_t kMaxColours = 32;
  static constexpr uint32_t kMaxDepth = 16;
  static constexpr uint32_t kMaxMicrothreads = 16;
  static constexpr uint32_t kMaxSwitchPositions = 8;
};

}  // namespace wse
