#pragma once
// The run configuration: a YAML file naming a machine preset (with optional overrides), the mesh
// and the kernel. Every error names the file and the field.
#include <filesystem>
#include <memory>
#include <string>

#include "fabric/geometry.hpp"
#include "core/machine_spec.hpp"
#include "core/errors.hpp"
#include "cluster/cluster.hpp"
#include "host/train_config.hpp"
#include "kernels/kernel.hpp"

namespace YAML {
class Node;
}

namespace wse {

// run.max_cycles' bound: a cycle count the engine's 64-bit clock and the cycles' products in the
// report (tiles x cycles) cannot overflow near.
inline constexpr Cycle kMaxRunCycles = Cycle(1) << 62;

struct RunConfig {
  std::filesystem::path source;
  MachineSpec machine;
  MeshShape mesh;
  std::string kernel = "gemv";
  std::shared_ptr<const KernelConfig> kernel_config;  // the kernel's own block (not for fc_train)
  TrainConfig train;                   // kernel fc_train
  Cycle max_cycles = 100'000'000;      // per run (for training: per layer and pass), at most kMaxRunCycles
};

// Directory holding the machine presets (machines/*.yaml).
std::filesystem::path machines_dir();
// Loads a preset by name (wse2, wse3) or by path to a YAML file.
MachineSpec load_machine(const std::string& name_or_path);
// Applies the machine fields present in `node` on top of `spec`; `where` prefixes errors, and
// `prefix` each field they name ("machine." for a run config's `machine:` mapping).
void apply_machine_fields(MachineSpec& spec, const YAML::Node& node, const std::string& where, const std::string& prefix = "");
RunConfig load_run_config(const std::filesystem::path& path);
// The cluster a training config describes (kernel fc_train).
ClusterConfig cluster_config(const RunConfig& cfg);

}  // namespace wse
