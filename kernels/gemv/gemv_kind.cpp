// `kernel: gemv` for the host: parses the `gemv:` block and places y = A x on a wafer
// (kernels/kernel.hpp).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/yaml_fields.hpp"
#include "kernels/gemv/gemv.hpp"

namespace wse {

namespace {

std::shared_ptr<const KernelConfig> parse_gemv(const YAML::Node& g, const KernelContext& ctx) {
  using namespace yaml;
  const std::string& where = ctx.where;
  if (!g) throw ConfigError(where + ": missing field 'gemv' (rows, cols, grid, seed) for kernel gemv");
  check_keys(g, where, "gemv", {"rows", "cols", "grid", "seed"});
  // The one missing named alone (both were named when one was: a CLI audit, forty-sixth round).
  if (!g["rows"] && !g["cols"]) throw ConfigError(where + ": fields 'gemv.rows' and 'gemv.cols' are required");
  for (const char* f : {"rows", "cols"})
    if (!g[f]) throw ConfigError(where + ": field 'gemv." + f + "' is required (A is gemv.rows x gemv.cols)");
  auto c = std::make_shared<GemvConfig>();
  c->rows = uint32_t(positive(g["rows"], where, "gemv.rows", 1u << 30));
  c->cols = uint32_t(positive(g["cols"], where, "gemv.cols", 1u << 30));
  if (YAML::Node grid = g["grid"]) {
    check_keys(grid, where, "gemv.grid", {"width", "height"});
    if (grid["width"]) c->grid_width = uint32_t(positive(grid["width"], where, "gemv.grid.width", ctx.mesh.width));
    if (grid["height"]) c->grid_height = uint32_t(positive(grid["height"], where, "gemv.grid.height", ctx.mesh.height));
  }
  if (g["seed"]) c->seed = integer_in(g["seed"], where, "gemv.seed", 0, UINT64_MAX);
  const uint32_t q = c->grid_width ? c->grid_width : std::min(ctx.mesh.width, c->cols);
  const uint32_t p = c->grid_height ? c->grid_height : std::min(ctx.mesh.height, c->rows);
  try {
    GemvKernel::check_tiles(c->rows, c->cols, q, p, ctx.machine.sram_bytes_per_pe);
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }
  return c;
}

class PlacedGemv : public PlacedKernel {
 public:
  PlacedGemv(Wafer& wafer, const GemvConfig& c)
      : cfg_(c), problem_(GemvProblem::random(c.rows, c.cols, c.seed)), kernel_(wafer, problem_, c.grid_width, c.grid_height) {}
  // Checked against the host: the same sums in the same order (bit for bit), and y in double
  // precision (the error of fp32 arithmetic, not of the emulator).
  std::vector<float> finish() override {
    std::vector<float> y = kernel_.result();
    const std::vector<float> same = kernel_.host_sum(problem_);
    uint64_t mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      mismatches += std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(same[i]);
      double exact = 0;
      for (uint32_t j = 0; j < problem_.cols; ++j) exact += double(problem_.a[i * size_t(problem_.cols) + j]) * double(problem_.x[j]);
      max_err_ = std::max(max_err_, std::abs(double(y[i]) - exact));
    }
    if (mismatches)
      throw std::logic_error("gemv: " + std::to_string(mismatches) + " of " + std::to_string(y.size()) +
                             " values of y differ from the host's sums in the same order");
    return y;
  }
  nlohmann::json report() const override {
    return {{"rows", cfg_.rows},
            {"cols", cfg_.cols},
            {"grid", {{"width", kernel_.grid_width()}, {"height", kernel_.grid_height()}}},
            {"matches_host_sum", true},
            {"max_abs_error_vs_exact", max_err_}};
  }

 private:
  GemvConfig cfg_;
  GemvProblem problem_;
  GemvKernel kernel_;
  double max_err_ = 0;
};

std::unique_ptr<PlacedKernel> place_gemv(Wafer& wafer, const KernelConfig& c) {
  return std::make_unique<PlacedGemv>(wafer, static_cast<const GemvConfig&>(c));
}

}  // namespace

KernelKind gemv_kernel_kind() { return {"gemv", "gemv", false, parse_gemv, place_gemv}; }

}  // namespace wse
