#pragma once
// SwarmX: the broadcast/reduce tree between MemoryX and N wafers. Broadcast hands every wafer
// the same immutable buffer (no copy per wafer); reduce sums gradients up the tree in a fixed
// order, so the result never depends on which wafer finished first.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/machine_spec.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

// Its figures are the machine preset's (host/config.cpp fills them from MachineSpec); the
// defaults are the default MachineSpec's (WSE-2), never figures of their own.
struct SwarmXConfig {
  uint32_t wafers = 1;
  uint32_t fanout = MachineSpec().swarmx_fanout;                                // 1:4 nodes
  uint64_t latency_per_level = MachineSpec().swarmx_latency_cycles;             // cycles per tree level
  double bytes_per_cycle_per_link = MachineSpec().swarmx_link_bytes_per_cycle;  // each link, each way
};

class SwarmX {
 public:
  explicit SwarmX(const SwarmXConfig& cfg);
  uint32_t levels() const { return levels_; }
  const SwarmXConfig& config() const { return cfg_; }

  // The same buffer for every wafer.
  std::vector<SharedBuffer> broadcast(const SharedBuffer& buffer) const {
    return std::vector<SharedBuffer>(cfg_.wafers, buffer);
  }
  // Cycles from the tree's root taking `bytes` to the last byte reaching a wafer: the tree's
  // latency plus the bytes at one link's bandwidth (the levels pipeline). MemoryX's own link to
  // the root (memoryx_latency_cycles, memoryx_bytes_per_cycle) is not in it. A closed form for
  // tests: a run's timing comes from the cluster's links (cluster/cluster.cpp), which add it.
  uint64_t broadcast_cycles(uint64_t bytes) const;
  uint64_t reduce_cycles(uint64_t bytes) const { return broadcast_cycles(bytes); }

  // Sums per-wafer vectors: each node adds its (up to fanout) children in index order, level by
  // level, exactly as the tree would.
  std::vector<float> reduce(const std::vector<std::vector<float>>& per_wafer) const;

 private:
  SwarmXConfig cfg_;
  uint32_t levels_ = 1;
};

}  // namespace wse
