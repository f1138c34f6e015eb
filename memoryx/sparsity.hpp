#pragma once
// Static weight sparsity as the run YAML's `sparsity:` block describes it (Cerebras Model Zoo
// 1.8 rules): which parameters are sparsified, at which level and how, and the masks themselves.
// A mask byte is 1 for a kept weight and 0 for a pruned one; pruned weights stay 0 for the run.
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace wse {

enum class SparsityInit { Random, TopK, FromZeros };
const char* to_string(SparsityInit m);
// A level as text, in the fewest digits that read back as the same double: 0.8 is "0.8", and
// 0.9999999 is not "1" (as "%.4g" printed it), which the loader would refuse.
std::string level_text(double level);
// Throws UsageError naming `field` for anything but random, topk, from_zeros.
SparsityInit parse_sparsity_init(const std::string& name, const std::string& field);

struct SparsityPattern {
  std::string pattern;  // as written, for messages
  std::regex re;        // matched by search on the parameter name
  std::optional<double> level;
  std::optional<SparsityInit> method;
  std::optional<uint64_t> seed;
};

struct SparsityConfig {
  bool enabled = false;                 // a `sparsity:` block is present
  std::optional<double> level;          // in [0, 1)
  SparsityInit method = SparsityInit::Random;
  std::optional<uint64_t> seed;         // default: the run's weights.seed
  std::optional<std::vector<SparsityPattern>> patterns;  // absent = the default selection
};

struct ParamInfo {
  std::string name;
  std::vector<uint32_t> shape;
};

// What the config asks for one parameter.
struct ParamSparsity {
  size_t param = 0;     // index in the model's parameter order
  std::string name;
  double level = 0;
  SparsityInit method = SparsityInit::Random;
  uint64_t seed = 0;    // base seed + param index
  std::string pattern;  // the pattern that matched ("" = default selection)
};

struct SparsityPlan {
  std::vector<ParamSparsity> params;  // in parameter order
  std::vector<std::string> warnings;  // patterns that match no parameter
};

// Parameters the default selection sparsifies: more than one dimension and no embedding, norm or
// lm_head in the name (case-insensitive).
bool sparsified_by_default(const ParamInfo& p);

// First matching pattern wins; unmatched parameters stay dense. Throws UsageError when a matched
// parameter has no level (random, topk) or a level outside [0, 1).
SparsityPlan plan_sparsity(const SparsityConfig& cfg, const std::vector<ParamInfo>& params, uint64_t default_seed);

// Pruned count at `level`: round(level * numel), half away from zero, so keep = numel - that.
uint64_t pruned_count(double level, uint64_t numel);

struct MaskChange {
  uint64_t pruned = 0;    // zeros in the new mask
  uint64_t newly_pruned = 0, regrown = 0;  // against `prior`
};

// The mask of one parameter with values `w`. `prior` (may be empty) is the pattern a sparse
// checkpoint carried: a level at or above it keeps every prior pruned weight pruned and prunes
// more (by the method among the kept ones); a lower level regrows prior pruned weights, chosen
// by a seeded shuffle. from_zeros prunes exactly the zero weights (and the prior pattern).
std::vector<uint8_t> sparsity_mask(const float* w, size_t n, const ParamSparsity& p, const std::vector<uint8_t>& prior,
                                   MaskChange* change = nullptr);

}  // namespace wse
