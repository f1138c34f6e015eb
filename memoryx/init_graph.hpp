#pragma once
// MemoryX's weight-initialization graph. A model's init ops are recorded per tensor; lazily
// (the default) nothing runs until materialize(), which prunes ops whose result is overwritten
// before it is read and runs each tensor's chain as an independent task, a few at a time,
// straight into the store's tensor. Eager mode runs every op at record time into a host tensor,
// the way a model built on CPU does, and then transfers it.
//
// Every random op takes its own generator seed from the run's default generator when it is
// recorded, and element i is a pure function of (op seed, i): the same seed gives bit-identical
// tensors lazy or eager, pruned or not, at any parallelism.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memoryx/tensor.hpp"

namespace wse {

struct InitSettings {
  bool lazy = true;           // lazy_initialization: record now, materialize later; false = eager
  bool optimize = true;       // optimize_initialization: prune ops whose result is fully overwritten before it is read
  uint32_t max_parallel = 4;  // max_async_parallel_compute: tensors materialized at once (>= 1)
};

enum class FanMode { In, Out };

struct InitStats {
  uint64_t tensors = 0, ops_recorded = 0, ops_pruned = 0, ops_executed = 0;
  uint64_t store_bytes = 0;         // bytes of the tensors handed to the store
  uint64_t host_bytes = 0;          // bytes held in host tensors now (eager: from add_tensor until the transfer ends)
  uint64_t peak_bytes = 0;          // most tensor bytes alive at once, host + store (eager ~2x store_bytes)
  uint32_t max_in_flight = 0;       // most tensors materializing at the same time (<= max_parallel)
  double record_seconds = 0, materialize_seconds = 0;  // wall time in record calls / in materialize()
};

class InitGraph {
 public:
  InitGraph(uint64_t seed, InitSettings settings);  // seed of the run's default generator

  size_t add_tensor(std::string name, std::vector<uint32_t> shape, uint32_t fan_in, uint32_t fan_out);
  void fill(size_t t, float value);
  void zero(size_t t);
  void normal(size_t t, double mean, double std);
  void uniform(size_t t, double lo, double hi);                 // [lo, hi); lo == hi fills lo
  void random_int(size_t t, int64_t lo, int64_t hi);            // integers in [lo, hi), stored as float
  void kaiming_uniform(size_t t, double a = 0, FanMode mode = FanMode::In);  // gain = sqrt(2/(1+a^2)), bound = gain*sqrt(3/fan)
  void kaiming_normal(size_t t, double a = 0, FanMode mode = FanMode::In);   // std = gain/sqrt(fan)
  void xavier_uniform(size_t t, double gain = 1);  // bound = gain*sqrt(6/(fan_in+fan_out))
  void xavier_normal(size_t t, double gain = 1);   // std = gain*sqrt(2/(fan_in+fan_out))
  void scale(size_t t, double factor);             // multiplies in place: reads the tensor, so not an overwrite
  void copy_from(size_t t, std::shared_ptr<const std::vector<float>> source);  // e.g. a checkpoint tensor; overwrites
  // Like copy_from, but `read(out, numel)` fills the tensor itself when the op runs (a checkpoint
  // file read straight into the store); it may run on any materialization thread.
  void load_from(size_t t, std::function<void(float*, size_t)> read);

  // Hands every tensor, in add_tensor order, to the store (MemoryX moves them into its own vectors).
  std::vector<Tensor> materialize();  // callable once; no ops may be recorded after it
  const InitStats& stats() const { return stats_; }
  size_t tensors() const { return tensors_.size(); }
  // The ops of tensor t that run (after pruning when optimize is on), as short names, for tests and DEBUG logs.
  std::vector<std::string> planned_ops(size_t t) const;

  // Test hook: called by each lazy materialization task, with its tensor id, once it is in flight.
  void on_task_start(std::function<void(size_t)> hook) { on_task_start_ = std::move(hook); }

 private:
  // One recorded op. kaiming_* / xavier_* are recorded as the uniform / normal they reduce to.
  enum class Kind : uint8_t { Fill, Uniform, Normal, RandomInt, Scale, Copy };
  struct Op {
    const char* name;
    Kind kind;
    double a = 0, b = 0;  // fill value / lo, hi / mean, std / factor
    int64_t lo = 0;       // random_int: lo and hi - lo
    uint64_t span = 0;
    uint64_t seed = 0;    // random ops: drawn from the default generator at record time
    std::shared_ptr<const std::vector<float>> source;  // copy_from
    std::function<void(float*, size_t)> read;          // load_from
  };

  struct Pending {
    std::string name;
    std::vector<uint32_t> shape;
    size_t numel = 0;
    uint32_t fan_in = 0, fan_out = 0;
    std::vector<Op> ops;
    size_t first_live = 0;  // ops before it are pruned
    std::vector<float> host;  // eager only
  };

  Pending& at(size_t t, const char* op);
  void record(size_t t, Op op);
  double fan(const Pending& p, FanMode mode, const char* op) const;
  static void apply(const Op& op, float* x, size_t n);

  InitSettings settings_;
  uint64_t rng_state_;  // the default generator: a splitmix64 sequence
  std::vector<Pending> tensors_;
  InitStats stats_;
  bool materialized_ = false;
  std::function<void(size_t)> on_task_start_;
};

}  // namespace wse
