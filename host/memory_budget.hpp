#pragma once
// What a run will need of host memory, estimated from the config alone, before anything big is
// built: the wafers' mesh (from the machine spec and mesh shape, with the sizes of the types the
// emulator allocates per tile), the GEMV problem, MemoryX's store of weights and optimizer state.
// The estimate errs low: it counts what building the run necessarily allocates, so a refusal is
// certain to be right; a run it lets through may still need more (docs/reliability.md).
#include <cstdint>
#include <string>

#include "host/config.hpp"

namespace wse {

struct MemoryEstimate {
  uint64_t bytes = 0;
  std::string detail;  // the parts, for the message: "2 wafers of 750x994 PEs: 2.1 GiB; MemoryX ..."
};

// One wafer: every tile's PE, router slot and scheduler state, plus, on each of `active_tiles`
// (the kernel's PEs), a router with its lanes and links and the SRAM page the kernel writes.
uint64_t wafer_bytes(const MachineSpec& spec, MeshShape mesh, uint64_t active_tiles);
// MemoryX's store: every weight and bias, its optimizer states, its sparsity mask; eager
// initialization holds a second copy while it hands the tensors over.
uint64_t memoryx_bytes(const TrainConfig& train);

MemoryEstimate estimate_run_memory(const RunConfig& cfg);
// Throws ConfigError naming the config, the estimate and the memory in force (io/memory_limit.hpp)
// when the run cannot fit.
void check_run_memory(const RunConfig& cfg);
// The same for `wse baseline`: its model's weights and optimizer states on the host
// (memoryx_bytes: the wafer is not built).
void check_baseline_memory(const RunConfig& cfg);

}  // namespace wse
