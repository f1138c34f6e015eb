#include "host/memory_budget.hpp"

#include "fabric/partition.hpp"
#include "io/memory_limit.hpp"
#include "memoryx/optimizer.hpp"
#include "pe/sram.hpp"
#include "wafer/wafer.hpp"

namespace wse {

namespace {

// What a heap block costs beyond its payload (glibc malloc: 16 bytes of header, 16-byte steps).
constexpr uint64_t kMallocOverhead = 16;
// The OS commits SRAM a page at a time, on first write (pe/sram.hpp).
constexpr uint64_t kPage = 4096;

std::string mesh_text(MeshShape m) { return std::to_string(m.width) + "x" + std::to_string(m.height); }

}  // namespace

uint64_t wafer_bytes(const MachineSpec& spec, MeshShape mesh, uint64_t active_tiles) {
  const uint64_t tiles = mesh.tiles();
  // Every tile: its PE, its router slot, its owner in the partition, its scheduler stamp.
  const uint64_t per_tile = sizeof(Pe) + sizeof(Router*) + sizeof(uint16_t) + sizeof(Cycle);
  // Every tile a kernel uses: a router with two lanes (every kernel here routes at least a
  // multicast and a chain through each of its PEs), three outgoing links with their queues, and
  // one SRAM page.
  const uint64_t link_queues = (spec.hop_latency_cycles + 2 + 2 * spec.router_buffer_depth + spec.hop_latency_cycles + 1) * sizeof(Flit);
  const uint64_t per_active = sizeof(Router) + kMallocOverhead + 2 * sizeof(Lane) + kMallocOverhead +
                              3 * (sizeof(Link) + link_queues + 3 * kMallocOverhead) + std::min<uint64_t>(kPage, spec.sram_bytes_per_pe);
  return add_sat(mul_sat(tiles, per_tile), mul_sat(std::min(active_tiles, tiles), per_active));
}

uint64_t memoryx_bytes(const TrainConfig& t) {
  uint64_t params = 0;
  for (size_t l = 0; l + 1 < t.layers.size(); ++l) params = add_sat(params, mul_sat(uint64_t(t.layers[l]) + 1, t.layers[l + 1]));
  uint64_t states = 1;
  try {
    states += optimizer_state_names(t.memoryx.optimizer).size();
  } catch (const std::exception&) {
  }
  uint64_t bytes = mul_sat(mul_sat(params, sizeof(float)), states);
  if (!t.memoryx.init.lazy) bytes = mul_sat(bytes, 2);  // eager: host tensors and the store at once
  if (t.memoryx.sparsity.enabled) bytes = add_sat(bytes, params);  // a mask byte per weight
  return bytes;
}

MemoryEstimate estimate_run_memory(const RunConfig& cfg) {
  MemoryEstimate e;
  auto part = [&](uint64_t bytes, const std::string& what) {
    e.bytes = add_sat(e.bytes, bytes);
    e.detail += (e.detail.empty() ? "" : "; ") + what + ": " + format_bytes(bytes);
  };
  if (kernel_kind(cfg.kernel, "config " + cfg.source.string()).training) {
    const TrainConfig& t = cfg.train;
    const uint64_t wafer = wafer_bytes(cfg.machine, cfg.mesh, cfg.mesh.tiles());
    part(mul_sat(wafer, t.num_csx), std::to_string(t.num_csx) + " wafer(s) of " + mesh_text(cfg.mesh) + " PEs");
    part(memoryx_bytes(t), "MemoryX store");
  } else {
    // Every PE may run the kernel's program; the kernel's own host data (a GEMV's matrix) besides.
    part(wafer_bytes(cfg.machine, cfg.mesh, cfg.mesh.tiles()), "a wafer of " + mesh_text(cfg.mesh) + " PEs");
    if (cfg.kernel_config && cfg.kernel_config->host_bytes())
      part(cfg.kernel_config->host_bytes(), "the " + cfg.kernel + " kernel's data (" + cfg.kernel_config->describe() + ")");
    // And its data again in the PEs' SRAM, beyond the page per tile counted with the wafer: a
    // GEMV of 25600² on 256 x 256 PEs was estimated at 2.85 GiB and peaked at 5.46.
    const uint64_t counted = mul_sat(cfg.mesh.tiles(), std::min<uint64_t>(kPage, cfg.machine.sram_bytes_per_pe));
    if (cfg.kernel_config && cfg.kernel_config->sram_bytes() > counted)
      part(cfg.kernel_config->sram_bytes() - counted, "its copy in the PEs' SRAM");
  }
  return e;
}

void check_run_memory(const RunConfig& cfg) {
  const MemoryEstimate e = estimate_run_memory(cfg);
  try {
    check_memory(e.bytes, "config " + cfg.source.string() + ": this run",
                 " (" + e.detail + "). Use a smaller mesh (mesh: {width, height}) or model, or, if you know the memory is there, "
                 "raise the limit with --max-memory");
    // Under `ulimit -v` the address space counts, and each wafer reserves its whole SRAM arena
    // (pe/sram.hpp: committed a page at a time, but mapped at once): a 750 x 120 GEMV of one
    // element passed the estimate and failed with exit 1 under a 4 GiB limit.
    const uint32_t wafers = kernel_kind(cfg.kernel, "config " + cfg.source.string()).training ? cfg.train.num_csx : 1;
    const uint64_t arena = mul_sat(mul_sat(cfg.mesh.tiles(), SramArena::stride(cfg.machine.sram_bytes_per_pe)), wafers);
    check_address_space(add_sat(e.bytes, arena), "config " + cfg.source.string() + ": this run",
                        " (" + e.detail + "; and the SRAM arena, reserved whole: " + std::to_string(cfg.mesh.tiles()) + " PEs x " +
                            std::to_string(cfg.machine.sram_bytes_per_pe) + " bytes" + (wafers > 1 ? " x " + std::to_string(wafers) + " wafers" : "") +
                            ", " + format_bytes(arena) + "). Use a smaller mesh, or raise ulimit -v");
  } catch (const UsageError& err) {
    throw ConfigError(err.what());
  }
}

void check_baseline_memory(const RunConfig& cfg) {
  // The store, and each step's copy of the weights, their gradients, and a batch's activations,
  // pre-activations and gradients per layer (host/baseline.cpp), which were not counted: a
  // [784, 262144, 10] model at a batch of 60,000 passed with 1.6 GB and needed 63.
  const TrainConfig& t = cfg.train;
  uint64_t params = 0, features = 0;
  for (size_t l = 0; l + 1 < t.layers.size(); ++l) params = add_sat(params, mul_sat(uint64_t(t.layers[l]) + 1, t.layers[l + 1]));
  for (uint32_t f : t.layers) features = add_sat(features, f);
  const uint64_t step = add_sat(mul_sat(mul_sat(params, sizeof(float)), 2), mul_sat(mul_sat(mul_sat(t.batch_size, features), sizeof(float)), 3));
  try {
    check_memory(add_sat(memoryx_bytes(t), step), "config " + cfg.source.string() + ": this baseline",
                 " (the model's weights and optimizer states, " + format_bytes(memoryx_bytes(t)) + "; a step's weights, gradients and "
                 "activations at training.batch_size " + std::to_string(t.batch_size) + ", " + format_bytes(step) +
                 "). Use a smaller model or batch, or, if you know the memory is there, raise the limit with --max-memory");
  } catch (const UsageError& err) {
    throw ConfigError(err.what());
  }
}

}  // namespace wse
