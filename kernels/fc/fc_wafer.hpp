#pragma once
// The run side of the FC kernel on one wafer (the `run.py` of a Cerebras SDK example): takes a
// step's batch in through the west edge, runs a layer's forward or backward pass with its weight
// streams entering at the north edge as they arrive from off the wafer, and reads back what
// leaves (loss and predictions east, dW south). It knows the layout and the wafer; who sent the
// streams and where the results go is the cluster's business (cluster/wafer_actor.hpp).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "kernels/fc/fc_functional.hpp"
#include "kernels/fc/fc_layout.hpp"
#include "wafer/wafer.hpp"
#include "wafer/worker_tuner.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

// What one (layer, pass) did on a wafer, summed over steps.
struct PassStats {
  uint64_t runs = 0, cycles = 0, macs = 0, macs_skipped = 0, wavelets_streamed = 0, memoryx_bytes = 0;
  uint64_t stream_bound_cycles = 0;   // until the last weight could enter at the edge's pace alone
  uint64_t compute_bound_cycles = 0;  // extra time backpressure held the stream back: busy PEs, or dW leaving at the edge's rate
  uint64_t tail_cycles = 0;           // after the last weight entered: reductions, broadcasts, dW
  uint64_t weights_streamed = 0;      // weights the stream carried (fp16 pairs: two per wavelet)
  uint64_t gradient_wavelets = 0;     // dW values that left the wafer (backward)
  uint64_t wait_cycles = 0;           // the wafer idle before the pass, waiting for its stream
  nlohmann::json to_json() const;
  void add(const PassStats& o);
};

// How a stream's bytes reach the wafer edge (from its messages' stamps): the head from
// head_first, the tail (what the edge could not hold before the pass began) from tail_first,
// both at the off-wafer path's rate.
struct EdgeTiming {
  Cycle head_first = 0;
  uint64_t head_bytes = UINT64_MAX;  // all of it by default
  Cycle tail_first = 0;
  double bytes_per_cycle = 0;        // 0: as fast as the edge takes it
  bool from_memoryx = true;          // false: weights the wafer kept (retain_last_layer), no MemoryX bytes
};

// One wafer's shard of a batch, as its input worker sends it: values row-major (rows x
// features), as fp32 bits or (mixed precision) fp16 bits, and a class label per row.
struct InputShard {
  uint32_t rows = 0, features = 0;
  bool half = false;
  std::vector<uint32_t> values;
  std::vector<uint8_t> labels;
};

struct FcPassResult {
  WaferRun run;
  Cycle start = 0, end = 0;           // wafer cycles: the pass began, and its last event + 1
  // forward of the last layer: loss summed over the shard, correct predictions
  double loss_sum = 0;
  uint32_t correct = 0;
  // backward: one dW per streamed weight, in stream order, and where each sits in the layer's
  // (in+1) x out matrix; when the first and the last left the wafer.
  std::vector<float> dw;
  std::vector<uint32_t> positions;
  Cycle first_egress = 0, last_egress = 0;
  // Some weight stream's last wavelet entered the wafer as it arrived from off the wafer: the
  // stream, not the wafer, may have set the pass's pace.
  bool arrival_bound = false;
};

// Looks at chosen passes (e.g. to record an activity dump): before_run returns the hooks for that
// run ({} to leave it alone). One observer may watch every wafer of a cluster, whose wafers step
// at once on the cluster's threads: calls for different wafers may come concurrently, and a
// call's wafer is its own thread's to touch.
struct KernelObserver {
  virtual ~KernelObserver() = default;
  virtual RunHooks before_run(uint32_t wafer, size_t layer, bool backward, Wafer& w) = 0;
  virtual void after_run(uint32_t wafer, size_t layer, bool backward, Wafer& w, const WaferRun& run) = 0;
};

class FcWafer {
 public:
  // Builds the layout onto `wafer` (routes, ports, programs) and finalizes it for `threads`.
  FcWafer(const FcLayout& layout, Wafer& wafer, uint32_t index, unsigned threads, Cycle max_cycles, std::string where);

  Wafer& wafer() { return wafer_; }
  uint32_t index() const { return index_; }
  void set_observer(KernelObserver* o) { observer_ = o; }

  // Takes the shard into SRAM through the west edge, from `start` on, at the off-wafer pace.
  FcPassResult load_input(const InputShard& shard, Cycle start, const EdgeTiming& timing);
  // One pass of layer l from `start` on, its column streams arriving as `timing` says.
  FcPassResult run_pass(size_t l, bool backward, const std::vector<DecodedStream>& streams, Cycle start, const EdgeTiming& timing);
  // After an evaluation batch (forward only): frees what the backward pass would have.
  void end_eval();
  // Cycle level (the default) or functional: the same numbers from kernels/fc/fc_functional.hpp
  // without the mesh, each pass timed as the last cycle-level run of the same pass (1 cycle
  // before there was one). Functional passes leave the wafer, its counters and the stats alone.
  void set_detailed(bool on) { detailed_ = on; }
  bool detailed() const { return detailed_; }

  const std::vector<PassStats>& forward_stats() const { return fwd_; }
  const std::vector<PassStats>& backward_stats() const { return bwd_; }
  PassStats& input_stats() { return input_; }
  double host_seconds() const { return host_seconds_; }
  // Each cycle-level run's wall interval, [start, end) in seconds of the host's steady clock (its
  // end read just after the run returns, its start that less the run's own host seconds):
  // wafers run side by side, so their runs' wall time is the union of these, not the sum of
  // host_seconds (Cluster::engine_seconds).
  const std::vector<std::pair<double, double>>& run_intervals() const { return intervals_; }
  // Cycles of every cycle-level run (input, passes, evaluation), over which host_seconds went.
  uint64_t engine_cycles() const { return engine_cycles_; }
  // Per-PE SRAM high water (bytes), max over PEs.
  uint32_t sram_high_water() const;
  // From now on each pass runs on the wafer's workers or on one, whichever measured faster for
  // that pass on this host (wafer/worker_tuner.hpp). Results are the same either way.
  void adapt_workers() { tuner_ = std::make_unique<WorkerTuner>(wafer_.workers()); }
  const WorkerTuner* worker_tuner() const { return tuner_.get(); }
  // Over the cycle-level runs on more than one worker: per worker, the host seconds it waited at
  // the barrier for the others (empty when none ran on more than one), and those runs' seconds.
  const std::vector<double>& waited_seconds() const { return waited_seconds_; }
  double shared_seconds() const { return shared_seconds_; }

 private:
  WaferRun run(const std::string& what, RunHooks hooks);
  void arrive(IngressPort& port, uint64_t words, uint64_t total_words, const EdgeTiming& t);

  const FcLayout& layout_;
  Wafer& wafer_;
  uint32_t index_;
  Cycle max_cycles_;
  std::string where_;
  std::vector<uint8_t> labels_;  // the current batch's, for scoring predictions
  bool collecting_ = false;      // stats are kept for training passes only
  std::vector<PassStats> fwd_, bwd_;
  PassStats input_;
  std::vector<double> waited_seconds_;  // per worker, over runs on more than one (waiting())
  double shared_seconds_ = 0;           // host seconds of those runs
  double host_seconds_ = 0;
  std::vector<std::pair<double, double>> intervals_;  // run_intervals()
  uint64_t engine_cycles_ = 0;
  KernelObserver* observer_ = nullptr;
  std::unique_ptr<WorkerTuner> tuner_;
  // What the last cycle-level run of each pass took, relative to its start.
  struct PassTiming {
    Cycle duration = 1, first_egress = 0, last_egress = 0;
    bool arrival_bound = false;
  };
  bool detailed_ = true;
  std::unique_ptr<FcFunctional> functional_;
  std::vector<PassTiming> fwd_time_, bwd_time_;
  PassTiming input_time_;
  // The end of this wafer's last input or pass, functional ones included (they do not move the
  // wafer's clock): a cycle-level run's wait is counted from there, not from the clock, which had
  // counted every functional step since the last cycle-level one as waiting for input.
  Cycle last_end_ = 0;
  Cycle idle_since(Cycle start) const { return std::min(start, std::max(wafer_.clock(), last_end_)); }
  FcPassResult functional_pass(size_t l, bool backward, const std::vector<DecodedStream>& streams, Cycle start);

 public:
  // Evaluation passes are not training: kept out of the stats.
  void set_collecting(bool on) { collecting_ = on; }
};

}  // namespace wse
