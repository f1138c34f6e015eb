#pragma once
// A weight-streaming training cluster as actors: MemoryX, a tree of SwarmX nodes, num_csx
// wafers, an input worker per wafer and the user node, wired with links from the machine preset
// and run by the conservative actor runtime. The host's training loop sees one call per step.
//
//            user node  <------------------ loss (summed) ------------+
//              |  StepBegin                                          |
//              v                                                     |
//   MemoryX --weights--> SwarmX root --> ... nodes (1:4) --> wafer 0..N-1 <-- input worker 0..N-1
//           <--summed dW--            <--   (reduce)     <--    dW
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/input_worker.hpp"
#include "cluster/memoryx_actor.hpp"
#include "cluster/runtime.hpp"
#include "cluster/swarmx_node.hpp"
#include "cluster/user_node.hpp"
#include "cluster/wafer_actor.hpp"
#include "kernels/fc/fc_layout.hpp"
#include "kernels/fc/fc_wafer.hpp"
#include "memoryx/memoryx.hpp"

namespace wse {

struct ClusterConfig {
  FcModel model;
  MeshShape mesh;
  MachineSpec machine;          // the wafer and the cluster's figures (links, MemoryX, edge buffer)
  MemoryXConfig memoryx;
  std::filesystem::path resume_from;
  bool retain_last_layer = false;
  DetailPolicy detail;          // which steps run cycle by cycle (the others functionally)
  Cycle max_cycles = 100'000'000;  // per pass
  // The user left the thread count to the engine: each wafer picks, per pass, between its workers
  // and one by what each measured on this host (wafer/worker_tuner.hpp).
  bool adaptive_workers = false;
};

struct StepResult {
  double loss = 0;       // mean over the global batch
  uint32_t correct = 0;  // argmax == label
  uint64_t cycles = 0;   // training: from the previous step's end to this one's (MemoryX's last update)
  Cycle end = 0;
  bool detailed = true;  // the wafers ran it cycle by cycle (else functionally, passes timed as their last cycle-level runs)
};

class Cluster {
 public:
  // Builds the actors and compiles the model onto every wafer. Throws ConfigError when a layer
  // cannot be mapped, saying what would fit.
  Cluster(const ClusterConfig& cfg, unsigned threads);
  ~Cluster();

  const FcLayout& layout() const { return *layout_; }
  uint32_t grid_rows() const { return layout_->p(); }
  uint32_t grid_cols() const { return layout_->q(); }
  MemoryX& memoryx() { return *memoryx_; }
  Wafer& wafer(uint32_t w) { return *wafers_[w]; }
  uint32_t wafers() const { return uint32_t(wafers_.size()); }
  static std::string layer_name(size_t l) { return FcLayout::layer_name(l); }
  // Threads: the actor runtime's, and each wafer's own workers.
  unsigned runtime_threads() const { return runtime_->threads(); }
  unsigned wafer_threads() const { return wafer_threads_; }
  // The mesh workers each wafer steps with, and all the workers a run uses (wafers side by side).
  unsigned wafer_workers() const { return Partition::workers_for(cfg_.mesh, wafer_threads_); }
  unsigned workers() const { return runtime_threads() * wafer_workers(); }
  uint32_t swarmx_levels() const { return levels_; }

  // The WeightStream messages of layer l for one pass as MemoryX would send them now.
  std::vector<SharedBuffer> streams(size_t l, StreamPass pass) const;
  // Placement, colours, routes and the SRAM plan per PE (--compile_only).
  nlohmann::json mesh_program() const;
  void set_observer(KernelObserver* o);
  // Tests: corrupt messages on their way.
  void set_tamper(std::function<void(Message&)> fn) { runtime_->set_tamper(std::move(fn)); }

  // One training step on a global batch (batch_size rows of features, and labels). Given the next
  // step's batch, the cluster may start on it (its input, MemoryX's streams) before this step
  // ends, as the machine does; the next call must then pass that batch.
  StepResult train_step(const float* x, const uint8_t* labels, const float* next_x = nullptr, const uint8_t* next_labels = nullptr);
  // Forward only: loss and correct predictions on one global batch.
  StepResult eval_batch(const float* x, const uint8_t* labels);

  // The summed gradient MemoryX applied for layer l in the last step ((in+1) x out, bias last).
  const std::vector<float>& last_gradient(size_t l) const { return mx_->last_gradient(l); }
  // Per layer and pass: wafer 0's figures, MACs summed over every wafer.
  std::vector<PassStats> forward_stats() const;
  std::vector<PassStats> backward_stats() const;
  // Wafer 0's figures alone, MACs too (what `wse trace` traces and reports).
  const std::vector<PassStats>& first_wafer_stats(bool backward) const {
    return backward ? fc_[0]->backward_stats() : fc_[0]->forward_stats();
  }
  PassStats input_stats() const;
  // The wall seconds in which some wafer's cycle-level run was going: wafers that run side by side
  // count once (the union of their runs' intervals). Summing each wafer's engine seconds, as this
  // did until the forty-seventh round, gave two wafers on two threads 5.2 s of engine time in a
  // 3.1 s training loop, and a tile-cycle rate that hardly rose with the threads.
  double engine_seconds() const;
  // Every wafer's cycle-level run cycles, summed (the tile-cycles over engine_seconds).
  uint64_t engine_cycles() const;
  uint64_t skipped_updates() const { return mx_->skipped_updates(); }
  uint32_t sram_high_water() const { return fc_[0]->sram_high_water(); }
  // Wafer 0's choice of workers per pass (null when the count was given: nothing was chosen).
  const WorkerTuner* worker_tuner() const { return fc_[0]->worker_tuner(); }
  // Per worker, the fraction of the cycle-level runs on more than one worker that it waited at the
  // barrier, over every wafer's such runs (worker w of each wafer counted together; empty when
  // none ran on more than one); and those runs' engine seconds, summed over the wafers. (Until
  // the forty-seventh round: wafer 0's alone.)
  std::vector<double> waiting() const;
  double multi_worker_seconds() const;
  Cycle update_cycles(size_t l) const { return mx_->update_cycles(l); }
  uint64_t stream_bytes(size_t l, StreamPass pass) const { return mx_->stream_bytes(l, pass); }

  // A finished training step's timeline: its span per actor, its critical path (contiguous
  // segments from the previous step's end to its own) and where its cycles went.
  nlohmann::json step_timeline(uint64_t step) const;
  // Every actor's spans (for wse trace).
  Timeline timeline() const { return runtime_->timeline(); }

 private:
  void begin(uint64_t step, bool eval);

  ClusterConfig cfg_;
  std::unique_ptr<FcLayout> layout_;
  std::unique_ptr<MemoryX> memoryx_;
  std::vector<std::unique_ptr<Wafer>> wafers_;
  std::vector<std::unique_ptr<FcWafer>> fc_;
  ClusterShape shape_;
  BatchTable batches_;
  std::unique_ptr<Runtime> runtime_;
  UserNode* user_ = nullptr;
  MemoryXActor* mx_ = nullptr;
  std::vector<WaferActor*> wafer_actors_;
  std::vector<SwarmXNode*> nodes_;
  std::vector<InputWorker*> workers_;
  unsigned wafer_threads_ = 1;
  uint32_t levels_ = 1;
  uint64_t issued_through_ = 0;  // training steps begun so far end before this one
  bool issued_any_ = false;
  uint64_t evals_ = 0;
  uint64_t train_calls_ = 0;  // train_step calls so far (step first_step_ + calls)
  Cycle eval_end_ = 0;       // when the last evaluation batch's loss was in
  std::map<uint64_t, Cycle> step_start_;  // per train step: the cycle its cycles count from
  uint64_t first_step_ = 0;
};

}  // namespace wse
