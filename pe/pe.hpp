#pragma once
// The PE actor. One task at a time: a task runs (its functional effect is immediate, its cost is
// the cycles the cost model charges), then its sends leave one wavelet per cycle onto the RAMP,
// then the PE takes the next task. Wavelets that arrive meanwhile wait in per-colour input
// queues; a full queue withholds credits from the router, which backpressures the fabric.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "fabric/link.hpp"
#include "fabric/machine_spec.hpp"
#include "fabric/scheduler.hpp"
#include "pe/pe_counters.hpp"
#include "pe/program.hpp"
#include "pe/sram.hpp"

namespace wse {

struct PeInputQueue {
  static constexpr uint32_t kSlots = MachineSpec::kMaxDepth + MachineSpec::kMaxLatency + 1;
  Colour colour = 0;
  uint8_t head = 0, count = 0;
  uint32_t slots[kSlots] = {};
};

// One queued send: `count` wavelets of `colour`, either one immediate payload or read from SRAM
// words starting at `offset` as they leave.
// The cycles of the task a PE ran last, by class, in the order they elapse from `start`:
// receive, then fmac, then move. Lets an observer split a task that straddles a sample boundary.
struct TaskCost {
  Cycle start = 0;
  uint32_t receive = 0, fmac = 0, move = 0;
  Colour colour = 0;   // the data task's colour, or the local task's id when `local`
  bool local = false;
  // The cycle the PE is free again (its sends, if any, leave from then on).
  Cycle end() const { return start + std::max<uint32_t>(1, receive + fmac + move); }
};

struct SendOp {
  Colour colour = 0;
  bool from_sram = false;
  uint32_t count = 0;
  uint32_t word = 0;  // payload, or SRAM byte offset of the next word
};

class Pe {
 public:
  static constexpr uint32_t kOutbox = 8;

  Coord coord;
  const Program* program = nullptr;
  Sram sram;
  PeCounters counters;
  // When set (tracing a few PEs), every task this PE runs is appended here. Written only by the
  // worker that steps this PE; no cost when null.
  std::vector<TaskCost>* task_log = nullptr;

  // Wiring done by the wafer: the router's RAMP links and the colours they carry.
  void attach(Link* ramp_down, Link* ramp_up, std::vector<Colour> rx_colours,
              const std::vector<std::pair<Colour, uint8_t>>& tx_credits);
  void step(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  bool wants_start() const { return program && program->start_task >= 0; }
  // A new run (a newly loaded kernel) starts its start task again.
  void rearm() { started_ = false; }
  // Counts an open send stall up to `end` (a sample boundary or the end of the run).
  void settle(Cycle end) {
    if (stall_from_ != kNever && stall_from_ < end) counters.stall_send_cycles += end - stall_from_, stall_from_ = end;
  }
  bool idle() const;

  // Read-only views for observers (activity dumps, traces).
  Cycle busy_until() const { return busy_until_; }
  const TaskCost& last_task() const { return last_task_; }
  bool stalled() const { return stall_from_ != kNever; }
  uint32_t input_occupancy() const {
    uint32_t n = 0;
    for (const auto& q : queues_) n += q.count;
    return n;
  }
  uint64_t outbox_wavelets() const {
    uint64_t n = 0;
    for (uint32_t i = 0; i < out_count_; ++i) n += outbox_[(out_head_ + i) % kOutbox].count;
    return n;
  }

 private:
  friend class PeContext;
  void run_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  void run_one_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  bool send_one(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);

  Link* ramp_down_ = nullptr;  // router -> PE
  Link* ramp_up_ = nullptr;    // PE -> router
  std::vector<PeInputQueue> queues_;
  std::array<uint8_t, MachineSpec::kMaxColours> credits_{};  // toward router lanes with rx RAMP
  std::array<SendOp, kOutbox> outbox_{};
  uint8_t out_head_ = 0, out_count_ = 0, rr_ = 0;
  uint32_t local_pending_ = 0;  // bit per local task id
  uint32_t tx_colours_ = 0;     // colours the router accepts from this PE
  Cycle busy_until_ = 0;
  TaskCost last_task_;
  Colour task_colour_ = 0;  // of the task run_one_task ran
  bool task_local_ = false;
  Cycle stall_from_ = kNever;  // first cycle of an ongoing send stall; the PE sleeps until a credit
  bool started_ = false;
};

// The API a task is written against. Costs follow the machine spec: fmac/axpy over n elements
// is ceil(n / simd) cycles, add and mov likewise at their own width.
class PeContext {
 public:
  PeContext(Pe& pe, const MachineSpec& spec) : pe_(pe), spec_(spec) {}

  Coord coord() const { return pe_.coord; }
  template <class T>
  T* at(uint32_t byte_offset) { return reinterpret_cast<T*>(pe_.sram.base() + byte_offset); }
  template <class T>
  T* at(SramRef r) { return at<T>(r.offset); }

  // y[i] += a * x[i], i < n.
  void fmac(float* y, const float* x, float a, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) y[i] += a * x[i];
    charge(pe_.counters.fmac_cycles, n, spec_.fmac_simd_fp32);
    pe_.counters.macs += n;
  }
  // axpy is the BLAS name for the same operation: y += a * x.
  void axpy(float* y, float a, const float* x, uint32_t n) { fmac(y, x, a, n); }
  // y[i] += x[i].
  void add(float* y, const float* x, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) y[i] += x[i];
    charge(pe_.counters.move_cycles, n, spec_.move_simd_fp32);
  }
  // An elementwise op over n elements that is neither a MAC nor a plain move (relu, a mask, a
  // softmax step): its effect is the caller's code, its cost is charged here like add.
  void elementwise(uint32_t n) { charge(pe_.counters.move_cycles, n, spec_.move_simd_fp32); }
  void mov(float* dst, const float* src, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) dst[i] = src[i];
    charge(pe_.counters.move_cycles, n, spec_.move_simd_fp32);
  }
  // Sends leave after the task's compute, one wavelet per cycle, in the order issued.
  void send(Colour c, float v) { enqueue({c, false, 1, std::bit_cast<uint32_t>(v)}); }
  void send(Colour c, const float* src, uint32_t n) {
    if (n) enqueue({c, true, n, uint32_t(reinterpret_cast<const uint8_t*>(src) - pe_.sram.base())});
  }
  void activate(uint8_t local_task) { pe_.local_pending_ |= 1u << local_task; }

  uint32_t cost() const { return cost_; }

 private:
  void charge(uint64_t& counter, uint32_t n, uint32_t simd) {
    uint32_t c = (n + simd - 1) / simd;
    counter += c;
    cost_ += c;
  }
  void enqueue(const SendOp& op);

  Pe& pe_;
  const MachineSpec& spec_;
  uint32_t cost_ = 0;
};

}  // namespace wse
