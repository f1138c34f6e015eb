// `kernel: gemv` for the host: parses the `gemv:` block and places y = A x on a wafer
// (kernels/kernel.hpp).
#include <yaml-cpp/yaml.h>

#include "core/yaml_fields.hpp"
#include "kernels/gemv/gemv.hpp"

namespace wse {

namespace {

std::shared_ptr<const KernelConfig> parse_gemv(const YAML::Node& g, const KernelContext& ctx) {
  using namespace yaml;
  const std::string& where = ctx.where;
  if (!g) throw ConfigError(where + ": missing field 'gemv' (rows, cols, grid, seed) for kernel gemv");
  check_keys(g, where, "gemv", {"rows", "cols", "grid", "seed"});
  if (!g["rows"] || !g["cols"]) throw ConfigError(where + ": fields 'gemv.rows' and 'gemv.cols' are required");
  auto c = std::make_shared<GemvConfig>();
  c->rows = uint32_t(positive(g["rows"], where, "gemv.rows", 1u << 30));
  c->cols = uint32_t(positive(g["cols"], where, "gemv.cols", 1u << 30));
  if (YAML::Node grid = g["grid"]) {
    check_keys(grid, where, "gemv.grid", {"width", "height"});
    if (grid["width"]) c->grid_width = uint32_t(positive(grid["width"], where, "gemv.grid.width", ctx.mesh.width));
    if (grid["height"]) c->grid_height = uint32_t(positive(grid["height"], where, "gemv.grid.height", ctx.mesh.height));
  }
  if (g["seed"]) c->seed = scalar<uint64_t>(g["seed"], where, "gemv.seed", "a non-negative integer");
  return c;
}

class PlacedGemv : public PlacedKernel {
 public:
  PlacedGemv(Wafer& wafer, const GemvConfig& c)
      : cfg_(c), problem_(GemvProblem::random(c.rows, c.cols, c.seed)), kernel_(wafer, problem_, c.grid_width, c.grid_height) {}
  std::vector<float> finish() override { return kernel_.result(); }
  nlohmann::json report() const override {
    return {{"rows", cfg_.rows},
            {"cols", cfg_.cols},
            {"grid", {{"width", kernel_.grid_width()}, {"height", kernel_.grid_height()}}}};
  }

 private:
  GemvConfig cfg_;
  GemvProblem problem_;
  GemvKernel kernel_;
};

std::unique_ptr<PlacedKernel> place_gemv(Wafer& wafer, const KernelConfig& c) {
  return std::make_unique<PlacedGemv>(wafer, static_cast<const GemvConfig&>(c));
}

}  // namespace

KernelKind gemv_kernel_kind() { return {"gemv", "gemv", false, parse_gemv, place_gemv}; }

}  // namespace wse
