#pragma once
// The order a step's work runs in, which MemoryX and every wafer agree on without asking: the
// batch in, the forward passes layer by layer, then (training) the backward passes from the last
// layer down. MemoryX streams each pass's weights in that order, except the last layer's backward
// pass when its weights stay on the wafer (retain_last_layer). Evaluation steps run forward only
// and have ids of their own, so they never collide with training steps.
#include <cstdint>
#include <string>
#include <vector>

#include "wire/weight_stream.hpp"

namespace wse {

inline constexpr uint64_t kEvalStepBase = uint64_t(1) << 48;
inline bool is_eval_step(uint64_t step) { return step >= kEvalStepBase; }
// Steps are kept from 0 inside the cluster; what users read (spans, messages) counts from 1, as
// the training log, checkpoints and report do.
inline std::string step_label(uint64_t step) {
  return is_eval_step(step) ? "evaluation batch " + std::to_string(step - kEvalStepBase + 1) : "step " + std::to_string(step + 1);
}

struct PassKey {
  uint32_t layer = 0;
  bool backward = false;
  bool operator==(const PassKey&) const = default;
};

inline std::string pass_label(PassKey k, const std::string& layer_name) { return layer_name + (k.backward ? " bwd" : " fwd"); }

// The passes a wafer runs in a step, in order.
inline std::vector<PassKey> step_passes(size_t layers, bool eval) {
  std::vector<PassKey> p;
  for (size_t l = 0; l < layers; ++l) p.push_back({uint32_t(l), false});
  if (!eval)
    for (size_t l = layers; l-- > 0;) p.push_back({uint32_t(l), true});
  return p;
}

// Which steps the wafers run cycle by cycle (`training.detail`); the others run functionally
// (kernels/fc/fc_functional.hpp: the same numbers, each pass timed as its last cycle-level run).
// Sampled: the first `first` steps, every step whose number (from 1) is a multiple of `every`,
// and the run's own first step (`run_first`: 0, or the step a resumed run starts at), so that a
// functional step always has a cycle-level run to be timed as (with none, its passes took a cycle
// each: a resumed run, or one with `first: 0`, came out whole steps short on the cluster's clock).
// Evaluation batches run cycle by cycle only with `all`.
struct DetailPolicy {
  enum class Mode : uint8_t { All, None, Sampled };
  Mode mode = Mode::All;
  uint64_t every = 0, first = 0;
  bool detailed(uint64_t step, uint64_t run_first) const {
    if (mode == Mode::All) return true;
    if (mode == Mode::None) return false;
    return step == run_first || step < first || (every && (step + 1) % every == 0);
  }
  bool eval_detailed() const { return mode == Mode::All; }
};

// Whether MemoryX streams this pass's weights (the retained last layer's backward pass it does not).
inline bool streamed(PassKey k, size_t layers, bool retain_last_layer) { return !(k.backward && retain_last_layer && k.layer + 1 == layers); }

}  // namespace wse
