#pragma once
// The run configuration: a YAML file naming a machine preset (with optional overrides), the mesh
// and the kernel. Every error names the file and the field.
#include <filesystem>
#include <string>

#include "fabric/geometry.hpp"
#include "fabric/machine_spec.hpp"
#include "fabric/errors.hpp"
#include "host/train_config.hpp"

namespace YAML {
class Node;
}

namespace wse {

struct ConfigError : UsageError {
  using UsageError::UsageError;
};

struct GemvConfig {
  uint32_t rows = 0, cols = 0;         // A is rows x cols (M x N)
  uint32_t grid_width = 0, grid_height = 0;  // PE grid Q x P; 0 = as large as mesh and shape allow
  uint64_t seed = 1;                   // A and x are drawn from a counter-based hash of (seed, index)
};

struct ReduceRunConfig {
  std::string algorithm = "chain";     // chain | tree
  uint32_t elements = 1;               // fp32 values per PE
  uint64_t seed = 1;
};

struct RunConfig {
  std::filesystem::path source;
  MachineSpec machine;
  MeshShape mesh;
  std::string kernel = "gemv";
  GemvConfig gemv;
  ReduceRunConfig reduce;              // kernel reduce
  TrainConfig train;                   // kernel fc_train
  Cycle max_cycles = 100'000'000;      // per run (for training: per layer and pass)
};

// Directory holding the machine presets (machines/*.yaml).
std::filesystem::path machines_dir();
// Loads a preset by name (wse2, wse3) or by path to a YAML file.
MachineSpec load_machine(const std::string& name_or_path);
// Applies the machine fields present in `node` on top of `spec`; `where` prefixes errors.
void apply_machine_fields(MachineSpec& spec, const YAML::Node& node, const std::string& where);
RunConfig load_run_config(const std::filesystem::path& path);

}  // namespace wse
