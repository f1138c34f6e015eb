#pragma once
// Weight-streaming training of a fully-connected network on num_csx emulated wafers: the layer
// compiler (placement, colours, routes, SRAM plan) and the run loop that streams each layer's
// weights from MemoryX through SwarmX, runs the wafers, and returns summed gradients to MemoryX.
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "fabric/cycle_engine.hpp"
#include "host/config.hpp"
#include "kernels/gemv/gemv.hpp"
#include "memoryx/memoryx.hpp"
#include "swarmx/swarmx.hpp"
#include "wafer/wafer.hpp"

namespace wse {

// What one (layer, pass) did, summed over steps.
struct PassStats {
  uint64_t runs = 0, cycles = 0, macs = 0, macs_skipped = 0, wavelets_streamed = 0, memoryx_bytes = 0;
  uint64_t stream_bound_cycles = 0;   // the weight stream at the I/O rate alone
  uint64_t compute_bound_cycles = 0;  // extra time backpressure from busy PEs held the stream back
  uint64_t tail_cycles = 0;           // after the last weight entered: reductions, broadcasts, dW
  uint64_t weights_streamed = 0;      // weights the stream carried (fp16 pairs: two per wavelet)
  uint64_t gradient_wavelets = 0;     // dW values that left the wafer (backward)
  nlohmann::json to_json() const;
};

struct StepResult {
  double loss = 0;       // mean over the global batch
  uint32_t correct = 0;  // argmax == label
  uint64_t cycles = 0;   // wafer 0 cycles of the step
};

// Looks at chosen kernel runs (a layer's forward or backward on one wafer), e.g. to record an
// activity dump: before_run returns the hooks for that run ({} to leave it alone).
struct KernelObserver {
  virtual ~KernelObserver() = default;
  virtual RunHooks before_run(uint32_t wafer, size_t layer, bool backward, Wafer& w) = 0;
  virtual void after_run(uint32_t wafer, size_t layer, bool backward, Wafer& w, const WaferRun& run) = 0;
};

class FcTrainer {
 public:
  // Builds MemoryX, SwarmX and the wafers and compiles the model onto them. Throws UsageError
  // (ConfigError) when a layer cannot be mapped, saying what would fit.
  FcTrainer(const RunConfig& cfg, unsigned threads);
  ~FcTrainer();

  uint32_t grid_rows() const { return p_; }
  uint32_t grid_cols() const { return q_; }
  MemoryX& memoryx() { return *memoryx_; }
  const SwarmX& swarmx() const { return *swarmx_; }
  Wafer& wafer(uint32_t w) { return *wafers_[w]; }

  // The WeightStream messages of layer l for one pass, one per PE column (none: backward of the
  // first layer, which needs no dX).
  std::vector<SharedBuffer> streams(size_t l, StreamPass pass) const;

  // Placement, colours, routes and the SRAM plan per PE, as JSON (--compile_only).
  nlohmann::json mesh_program() const;

  void set_observer(KernelObserver* o) { observer_ = o; }
  static std::string layer_name(size_t l) { return "fc" + std::to_string(l + 1); }

  // One training step on a global batch (batch_size rows of `features` floats, and labels).
  StepResult train_step(const float* x, const uint8_t* labels);
  // Forward only: loss and correct predictions on one global batch.
  StepResult eval_batch(const float* x, const uint8_t* labels);

  // The summed gradient MemoryX applied for layer l in the last step ((in+1) x out, bias last).
  const std::vector<float>& last_gradient(size_t l) const { return last_grads_[l]; }

  const std::vector<PassStats>& forward_stats() const { return fwd_; }
  const std::vector<PassStats>& backward_stats() const { return bwd_; }
  double host_seconds() const { return host_seconds_; }
  // Layer updates MemoryX skipped because a gradient was not finite (mixed precision overflow).
  uint64_t skipped_updates() const { return skipped_updates_; }

  // Per-PE SRAM high water on wafer 0 (bytes), max over PEs.
  uint32_t sram_high_water() const;

 private:
  struct Slices;
  void load_inputs(uint32_t w, const float* x, const uint8_t* labels);
  StepResult forward(const float* x, const uint8_t* labels, bool training);
  void backward(uint64_t step);
  WaferRun run_kernel(uint32_t w, size_t layer, bool backward, const std::vector<SharedBuffer>& streams, PassStats& stats);
  void check_sram_plan() const;

  RunConfig cfg_;
  unsigned threads_;
  uint32_t p_ = 0, q_ = 0, batch_per_wafer_ = 0;
  Split rows_;
  std::vector<Split> features_;  // per layer input: features split over columns (+ ones row in the last)
  std::unique_ptr<MemoryX> memoryx_;
  std::unique_ptr<SwarmX> swarmx_;
  std::vector<std::unique_ptr<Wafer>> wafers_;
  std::vector<PassStats> fwd_, bwd_;
  std::vector<std::vector<float>> last_grads_;
  double host_seconds_ = 0;
  uint64_t skipped_updates_ = 0;
  KernelObserver* observer_ = nullptr;
};

}  // namespace wse
