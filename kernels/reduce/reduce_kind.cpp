// `kernel: reduce` for the host: parses the `reduce:` block, places the reduce on the top row of
// a wafer, and checks its sums against the host's when the run is over (kernels/kernel.hpp).
#include <yaml-cpp/yaml.h>

#include <bit>
#include <cmath>

#include "core/yaml_fields.hpp"
#include "kernels/reduce/reduce.hpp"

namespace wse {

namespace {

std::shared_ptr<const KernelConfig> parse_reduce(const YAML::Node& r, const KernelContext& ctx) {
  using namespace yaml;
  const std::string& where = ctx.where;
  if (!r) throw ConfigError(where + ": missing field 'reduce' (algorithm, elements, seed) for kernel reduce");
  check_keys(r, where, "reduce", {"algorithm", "elements", "seed"});
  auto c = std::make_shared<ReduceConfig>();
  if (r["algorithm"]) c->algorithm = scalar<std::string>(r["algorithm"], where, "reduce.algorithm", "chain or tree");
  if (c->algorithm != "chain" && c->algorithm != "tree")
    throw ConfigError(where + ": field 'reduce.algorithm': expected chain or tree, got '" + c->algorithm + "'");
  if (!r["elements"]) throw ConfigError(where + ": field 'reduce.elements' is required (fp32 values per PE)");
  // The range the placement allows: the kernel's own variables share the SRAM.
  // At most a DSD's extent too (a u16): with more SRAM than a WSE-2's, 100,000 elements placed and
  // were refused by the run naming an op.
  const uint64_t most = std::min<uint64_t>(ReduceKernel::max_elements(ctx.machine.sram_bytes_per_pe), 0xffff);
  if (most == 0)
    throw ConfigError(where + ": field 'machine.sram_bytes_per_pe': " + std::to_string(ctx.machine.sram_bytes_per_pe) +
                      " bytes cannot hold the reduce kernel's own variables and one element");
  c->elements = uint32_t(positive(r["elements"], where, "reduce.elements", most));
  if (r["seed"]) c->seed = integer_in(r["seed"], where, "reduce.seed", 0, UINT64_MAX);
  if (c->algorithm == "tree" && !std::has_single_bit(ctx.mesh.width))
    throw ConfigError(where + ": field 'mesh.width': the tree reduce needs a power of two, got " + std::to_string(ctx.mesh.width));
  // PE (0,0) queues an op per level of the tree behind its first stream, and a task queues at most
  // 16 items (pe/pe.hpp): 16 levels failed at run time naming the PE's queue, not the config.
  if (c->algorithm == "tree" && ctx.mesh.width > 32768)
    throw ConfigError(where + ": field 'mesh.width': the tree reduce takes at most 32768 PEs (a level per doubling, each an op "
                      "PE (0,0) queues behind its stream, at most 16 of them), got " + std::to_string(ctx.mesh.width));
  return c;
}

class PlacedReduce : public PlacedKernel {
 public:
  PlacedReduce(Wafer& wafer, const ReduceConfig& c) : cfg_(c), kernel_(wafer, c) {}

  // Checked against the host: the same sums in the same order (bit for bit), and the exact sums.
  std::vector<float> finish() override {
    if (!kernel_.finished())
      throw std::logic_error("reduce: the run ended before PE (0,0) finished its last operation (the fabric went quiet: a deadlock)");
    std::vector<float> result = kernel_.result();
    const std::vector<float> same = kernel_.host_sum();
    const std::vector<double> exact = kernel_.exact_sum();
    uint64_t mismatches = 0;
    for (size_t i = 0; i < result.size(); ++i) {
      mismatches += std::bit_cast<uint32_t>(result[i]) != std::bit_cast<uint32_t>(same[i]);
      max_err_ = std::max(max_err_, std::abs(double(result[i]) - exact[i]));
    }
    if (mismatches)
      throw std::logic_error("reduce: " + std::to_string(mismatches) + " of " + std::to_string(result.size()) +
                             " sums differ from the host's sums in the same order");
    return result;
  }
  nlohmann::json report() const override {
    return {{"algorithm", cfg_.algorithm},
            {"elements", cfg_.elements},
            {"width", kernel_.width()},
            {"reduce_cycles", kernel_.reduce_cycles()},
            {"switch_advances", kernel_.switch_advances()},
            {"matches_host_sum", true},
            {"max_abs_error_vs_exact", max_err_}};
  }

 private:
  ReduceConfig cfg_;
  ReduceKernel kernel_;
  double max_err_ = 0;
};

std::unique_ptr<PlacedKernel> place_reduce(Wafer& wafer, const KernelConfig& c) {
  return std::make_unique<PlacedReduce>(wafer, static_cast<const ReduceConfig&>(c));
}

}  // namespace

KernelKind reduce_kernel_kind() { return {"reduce", "reduce", false, parse_reduce, place_reduce}; }

}  // namespace wse
