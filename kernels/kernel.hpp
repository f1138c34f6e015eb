#pragma once
// A kernel as the host sees it: a name, the YAML block it parses, and how it places itself on a
// wafer for one run and reports back. Each kernel folder (kernels/gemv, kernels/reduce) defines
// one KernelKind; kernels/registry.cpp lists them by name, so the host never branches on kernel
// names: it looks the name up and calls what it finds.
//
//   config:   kind.parse(root, {where, machine, mesh}) -> a KernelConfig (the kernel's own block)
//   run:      kind.place(wafer, config) -> a PlacedKernel; the host finalizes and runs the wafer;
//             placed->finish() checks and reads back the result, placed->report() adds the
//             kernel's block to report.json.
// Training kernels (fc_train) run a training loop instead of one wafer run: `training` is set
// and the host's training job takes them.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/machine_spec.hpp"
#include "fabric/geometry.hpp"
#include "wafer/wafer.hpp"

namespace wse {

// What a kernel reads from the config: the file (for errors) and the machine and mesh it runs on.
struct KernelContext {
  std::string where;  // "config FILE", prefixed to every error
  MachineSpec machine;
  MeshShape mesh;
};

// A kernel's own config block, parsed.
struct KernelConfig {
  virtual ~KernelConfig() = default;
  // One line for the CLI: "1000x1000", "chain reduce of 1024 fp32 per PE".
  virtual std::string describe() const = 0;
  // Host memory the kernel itself needs beyond the wafer (its matrices), for the memory check.
  virtual uint64_t host_bytes() const { return 0; }
  // What the placed kernel writes into the PEs' SRAM in all (a GEMV's A tiles), which the host
  // commits page by page as it is written: the memory check counts it beyond a page per tile.
  virtual uint64_t sram_bytes() const { return 0; }
};

// A kernel placed on one wafer for one run.
class PlacedKernel {
 public:
  virtual ~PlacedKernel() = default;
  // After the run: check it finished and read the result back (throws if it did not).
  virtual std::vector<float> finish() = 0;
  // The kernel's block of report.json.
  virtual nlohmann::json report() const = 0;
};

struct KernelKind {
  std::string name;
  std::string block;      // the top-level YAML key it parses ("" for training kernels)
  bool training = false;  // runs a training loop (host/train_job), not one wafer run
  std::shared_ptr<const KernelConfig> (*parse)(const YAML::Node& block, const KernelContext& ctx) = nullptr;
  std::unique_ptr<PlacedKernel> (*place)(Wafer& wafer, const KernelConfig& config) = nullptr;
};

// Every kernel, by name. Throws ConfigError naming `where` and listing the known kernels.
const KernelKind& kernel_kind(const std::string& name, const std::string& where);
const std::vector<KernelKind>& kernel_kinds();

}  // namespace wse
