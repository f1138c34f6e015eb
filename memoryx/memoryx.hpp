#pragma once
// MemoryX: holds every weight and its optimizer state off the wafer, streams a layer's weights
// for the forward and again for the backward pass, applies the reduced gradients, and writes and
// reads checkpoints. It knows layers and tensors, never mesh coordinates: a stream is cut into
// slices the caller names.
//
// Its store is filled by the lazy initialization graph (init_graph.hpp): the model's init ops
// are recorded, then materialized straight into the store. Static sparsity (sparsity.hpp) is
// applied to the materialized weights; pruned weights and their optimizer states stay 0, and
// checkpoints mark them with NaN.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/machine_spec.hpp"
#include "memoryx/init_graph.hpp"
#include "memoryx/optimizer.hpp"
#include "memoryx/safetensors.hpp"
#include "memoryx/sparsity.hpp"
#include "memoryx/tensor.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

// The largest step a checkpoint may record (2^47 - 1): the cluster numbers its evaluation batches
// from 2^48 (cluster/step_plan.hpp), and a run adds fewer than 2^47 steps to the one it resumes
// (at most 1000 epochs of at most 2^32 samples), so no training step reaches them.
inline constexpr uint64_t kMaxCheckpointStep = (uint64_t(1) << 47) - 1;

struct LayerSpec {
  std::string name;
  uint32_t in = 0, out = 0;
};

// An init op the model config adds after nn.Linear's default (which it then overwrites, so the
// lazy graph prunes the default). kind: default | zeros | fill | normal | uniform |
// kaiming_uniform | kaiming_normal | xavier_uniform | xavier_normal.
struct ParamInit {
  std::string kind = "default";
  double a = 0, b = 0;  // fill: value a; normal: mean a, std b; uniform: [a, b); kaiming: slope a; xavier: gain a
  double scale = 1;     // then multiplied by this (1 = no op)
};

struct MemoryXConfig {
  OptimizerConfig optimizer;
  double bytes_per_cycle = MachineSpec().memoryx_bytes_per_cycle;  // the preset's (host/config.cpp); default WSE-2's
  StreamEncoding encoding = StreamEncoding::Dense;
  uint64_t seed = 1;                // the default generator of the initialization
  SparsityConfig sparsity;
  InitSettings init;
  ParamInit weight_init, bias_init;
};

// What sparsification did to one parameter.
struct SparsifiedParam {
  ParamSparsity plan;
  uint64_t numel = 0, pruned = 0;
  uint64_t newly_pruned = 0, regrown = 0;  // against the checkpoint's pattern
  bool from_sparse_checkpoint = false;
};

class MemoryX {
 public:
  // `resume` (may be null) is consumed: its tensors are moved into the store.
  MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers, Checkpoint* resume = nullptr,
          const std::string& resume_where = "checkpoint");
  // Resumes from a checkpoint file: each tensor is read straight into the store by its init task.
  MemoryX(const MemoryXConfig& cfg, const std::vector<LayerSpec>& layers, const SafetensorsFile& resume);

  // Every parameter in model order (weight, bias per layer), as the sparsity config sees them.
  static std::vector<ParamInfo> parameters(const std::vector<LayerSpec>& layers);

  const MemoryXConfig& config() const { return cfg_; }
  size_t layers() const { return layers_.size(); }
  const LayerSpec& layer(size_t l) const { return layers_[l]; }
  LayerView view(size_t l) const;
  Tensor& weight(size_t l) { return params_[2 * l]; }
  Tensor& bias(size_t l) { return params_[2 * l + 1]; }
  const Tensor& param(size_t p) const { return params_[p]; }
  const std::vector<Tensor>& states(size_t p) const { return states_[p]; }
  // Mask of parameter p (1 = kept); empty when p is dense.
  const std::vector<uint8_t>& param_mask(size_t p) const { return masks_[p]; }
  const std::vector<uint8_t>& mask(size_t l) const { return masks_[2 * l]; }
  const std::vector<SparsifiedParam>& sparsified() const { return sparsified_; }
  const InitStats& init_stats() const { return init_stats_; }
  uint64_t step() const { return step_; }

  std::vector<SharedBuffer> stream(size_t l, StreamPass pass, const std::vector<StreamSlice>& slices) const {
    return encode_weight_streams(view(l), step_, pass, cfg_.encoding, slices);
  }
  // Cycles MemoryX needs to push `bytes` at its bandwidth.
  uint64_t stream_cycles(uint64_t bytes) const;

  // The summed gradient of layer l as an (in+1) x out matrix (bias gradient in the last row),
  // scaled by `loss_scale` (mixed precision). Returns false, and changes nothing, when a value is
  // not finite (an fp16 overflow on the wafer).
  bool apply_gradient(size_t l, const std::vector<float>& grad, float loss_scale = 1.0f);
  // Counts one finished training step (after every layer's gradient is applied).
  void finish_step() { ++step_; }

  // Extra metadata every checkpoint carries from now on (the training run's plan: where it
  // ends, its batch size), beside step, optimizer and format.
  void set_run_metadata(std::map<std::string, std::string> m) { run_metadata_ = std::move(m); }

  // Weights, optimizer states and step; pruned weights and their states hold the NaN sentinel.
  Checkpoint checkpoint() const;
  // The same, written straight from the store to a safetensors file (no copy of the model).
  void write_checkpoint(const std::filesystem::path& path) const;

 private:
  void initialize(Checkpoint* in_memory, const SafetensorsFile* file, const std::string& where);
  void sparsify(const std::string& where);
  std::vector<TensorView> checkpoint_views() const;
  std::map<std::string, std::string> checkpoint_metadata() const;

  MemoryXConfig cfg_;
  std::vector<LayerSpec> layers_;
  std::vector<Tensor> params_;               // per layer: weight (in x out), bias (out)
  std::vector<std::vector<Tensor>> states_;  // per parameter: optimizer states
  std::vector<std::vector<uint8_t>> masks_;  // per parameter: 1 = kept; empty = dense
  std::vector<SparsifiedParam> sparsified_;
  InitStats init_stats_;
  uint64_t step_ = 0;                        // completed steps
  bool fresh_ = false;                       // initialized from the config's init, not a checkpoint
  std::map<std::string, std::string> run_metadata_;
};

}  // namespace wse
