#pragma once
// The PE actor: a datapath shared by a main thread and microthreads, per-colour input and output
// queues, and the task scheduler.
//
// - The main thread runs tasks, one at a time. A task body (C++) runs when the task starts; the
//   DSD operations it issues run in issue order. One whose operands are all in memory runs at
//   once (its effect is immediate, its cycles follow) unless an earlier operation of the task is
//   still streaming, in which case it waits its turn. One with a fabric operand streams one
//   element per cycle, as the fabric delivers and accepts them; the task is over when its last
//   operation is. Code after a streaming op does not see its results: put it in a task the op
//   activates.
// - An asynchronous operation (OpOptions::async) runs on a microthread beside the main thread
//   and, when it finishes, activates or unblocks a task.
// - The datapath does one thing per cycle: a data task's receive, one cycle of a memory op's
//   SIMD work, or one element of a streaming op. Threads that can go take turns (round-robin);
//   an op with an empty fabric input or a full output queue waits without holding the others up.
// - A result leaves the datapath `dsd_pipeline_cycles` after its operands were read into the
//   colour's output queue, which drains onto the RAMP one wavelet per cycle, as credits allow.
// - Data tasks fire per wavelet on colours that are not blocked and that no running op reads.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/link.hpp"
#include "core/machine_spec.hpp"
#include "fabric/scheduler.hpp"
#include "pe/dsd.hpp"
#include "pe/dsd_op.hpp"
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

// A colour's output queue: results wait `dsd_pipeline_cycles` here, then drain onto the RAMP.
struct PeOutputQueue {
  static constexpr uint32_t kSlots = 16;  // pe_output_queue_depth + dsd_pipeline_cycles (config checks it)
  Colour colour = 0;
  uint8_t head = 0, count = 0, cap = 0;
  uint32_t payload[kSlots] = {};
  uint8_t flags[kSlots] = {};
  uint32_t ready[kSlots] = {};  // low 32 bits of the cycle it may leave (always within a few cycles of now)
  // Whether the head may leave at `now`, and when it may.
  bool head_ready(Cycle now) const { return int32_t(uint32_t(now) - ready[head]) >= 0; }
  Cycle head_ready_at(Cycle now) const { return Cycle(int64_t(now) + int32_t(ready[head] - uint32_t(now))); }
};

// A stretch of one PE's activity, for traces and activity dumps: a task (its receive and the
// work of the memory ops it ran at once) or one DSD operation on a thread. The cycles of each
// class are charged in the order receive, fmac, move from `start` for a task; an op's span
// [start, end) holds its element cycles and the waits between them.
struct TaskCost {
  Cycle start = 0;
  uint32_t receive = 0, fmac = 0, move = 0;
  Colour colour = 0;   // the data task's colour, or the local task's id when `local`
  bool local = false;
  uint8_t thread = 0;  // 0 = main thread, k + 1 = microthread k
  const char* op = nullptr;  // a DSD op's builtin name (nullptr for a task)
  Cycle finish = 0;          // an op's end (0: start + its cycles)
  // The cycle the slice ends (for a task: the PE is free of its immediate work again).
  Cycle end() const { return finish ? finish : start + std::max<uint32_t>(1, receive + fmac + move); }
};

// Cache-line aligned: the wafer keeps its PEs side by side, and two PEs stepped by different
// workers (either side of a band edge) must not share a line that both write every step.
class alignas(64) Pe {
 private:
  struct ActiveOp;  // (below)

  // What every step reads, in the PE's first two lines. The PEs of a 16x16 mesh do not fit the
  // first-level cache, and with these fields spread over six of a PE's nine lines a step waited
  // on lines it used a field or two of (docs/performance-history.md, twenty-sixth round: about a
  // seventh fewer first-level read misses of the FC step modelled, a sixth fewer of the last
  // level). Laying out the rest by use too (the counters and SRAM, a task's state) changed
  // nothing measured.
  //
  // What due() reads comes first. `noted_` is set by the router's pushes onto the RAMP links
  // (LinkQueue::set_note, by attach(); the router is on the same tile, so stepped by the same
  // worker): kNotedFlits for a wavelet on RAMP-down, kNotedCredits for a credit on RAMP-up.
  // ingest() clears it and notes again a link that holds what is not visible yet. `due_` is the
  // cycle the last step asked to be stepped at next.
  static constexpr uint8_t kNotedFlits = 1, kNotedCredits = 2;
  Cycle due_ = 0;
  uint8_t noted_ = 0;
  bool started_ = false;
  bool main_active_ = false;             // the main thread has a streaming op (main_op_)
  uint8_t fifo_head_ = 0, fifo_count_ = 0;  // the main thread's queue behind it (fifo_)
  uint8_t grant_rr_ = 0, microthreads_ = 0;
  uint8_t uts_slots_ = 0;                // microthread slots allocated (uts_)
  Cycle busy_until_ = 0;                 // the main thread computes (a task's receive, memory ops) until then
  Cycle work_until_ = 0;                 // ... of which its counted datapath cycles end here (a task of no cost still takes a cycle)
  Cycle stall_from_ = kNever;            // first cycle of an ongoing send stall
  // First cycle not yet counted of an ongoing wait on the RAMP-up link: an output queue's head
  // ready to leave without a credit, and nothing sent (counted as the link's backpressure, as a
  // router counts its out links', when the PE next steps or settles).
  Cycle ramp_blocked_from_ = kNever;
  // First cycle not yet counted of an ongoing sleep while an op is set up (counters.setup_cycles).
  Cycle setup_from_ = kNever;
  // No op is set up at or after this cycle (the latest ready of an op given a setup): a step
  // before it looks for setup cycles, a step after it (almost all) does not.
  Cycle setup_until_ = 0;
  Cycle woken_for_ = kNever;             // the last cycle wake() asked for, in this run (rearm forgets it)
  // The cycle after the last one in which this PE did anything the activity dump counts as
  // activity (datapath work, a send, a send stall, setup, a wavelet taken in): the dump counts
  // the cycles after it as idle, not as waiting for input. `activity_seen_` is the sum of those
  // counters when it was last set, so a step finds whether it added any with one comparison.
  Cycle active_end_ = 0;
  uint64_t activity_seen_ = 0;
  uint32_t uts_active_ = 0;              // microthreads with an op
  // Bit masks by colour (and task id), so the per-cycle questions (may a data task fire? is
  // anything waiting to leave?) are a few instructions, not loops over the queues.
  uint32_t queued_ = 0;         // colours with wavelets in their input queue
  uint32_t data_tasks_ = 0;     // colours the program binds a data task to (set by rearm)
  uint32_t local_pending_ = 0;  // bit per local task id
  uint32_t local_blocked_ = 0;
  uint32_t colour_blocked_ = 0;
  uint32_t reading_ = 0;        // colours an active op reads (their data tasks do not fire)
  uint32_t writing_ = 0;        // colours an active op writes
  uint32_t out_wavelets_ = 0;   // wavelets in the output queues, all colours
  uint8_t rr_ = 0, out_rr_ = 0;
  // The main thread's streaming op and the microthreads' (see fifo_ and microthread_slot()).
  std::unique_ptr<ActiveOp> main_op_;
  std::unique_ptr<ActiveOp[]> uts_;
  Link* ramp_down_ = nullptr;  // router -> PE
  Link* ramp_up_ = nullptr;    // PE -> router

 public:
  // Whether step() may do anything at `now`. Between its steps a PE's state changes only through
  // its RAMP links, so a step is needed only at the cycle the last one computed (the first cycle
  // a thread or an output queue can move, `due_`) or after the router pushed a wavelet onto its
  // RAMP-down link or a credit onto its RAMP-up link (`noted_`, set by the push). A tile woken
  // for its router alone (a wavelet passing through) then skips its PE: the step it skips would
  // find nothing ready and change nothing.
  bool due(Cycle now) const { return noted_ != 0 || now >= due_; }

  const Program* program = nullptr;  // (the last of the step's two lines)
  Coord coord;
  Sram sram;
  PeCounters counters;
  // When set (tracing a few PEs), every task and DSD op this PE runs is appended here. Written
  // only by the worker that steps this PE; no cost when null.
  std::vector<TaskCost>* task_log = nullptr;

  // What a program asks of the machine, checked when it is placed: its local task IDs (shared
  // with data tasks' on WSE-2), start task, colours and microthreads. A kernel that loads a
  // program only when a pass runs checks it at placement with this too.
  static void check_program(const Program& program, const MachineSpec& spec, Coord coord);
  // Wiring done by the wafer: the router's RAMP links and the colours they carry.
  void attach(Link* ramp_down, Link* ramp_up, std::vector<Colour> rx_colours,
              const std::vector<std::pair<Colour, uint8_t>>& tx_credits, const MachineSpec& spec);
  void step(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  bool wants_start() const { return program && program->start_task >= 0; }
  // A new run (a newly loaded kernel) starts its start task again, with its blocks.
  void rearm();
  // Counts an open send stall up to `end` (a sample boundary or the end of the run).
  void settle(Cycle end) {
    if (stall_from_ != kNever && stall_from_ < end) {
      counters.stall_send_cycles += end - stall_from_, activity_seen_ += end - stall_from_;
      stall_from_ = end, active_end_ = std::max(active_end_, end);
    }
    if (ramp_blocked_from_ != kNever && ramp_blocked_from_ < end)
      ramp_up_->counters.backpressure_cycles += end - ramp_blocked_from_, ramp_blocked_from_ = end;
    if (setup_from_ != kNever) {
      if (setup_from_ < end) {
        counters.setup_cycles += end - setup_from_, activity_seen_ += end - setup_from_;
        active_end_ = std::max(active_end_, end);
      }
      setup_from_ = std::max(setup_from_, end);
    }
  }
  // The cycle after this PE's last activity (see active_end_; 0 if none yet). Counters settled
  // up to a boundary (settle()) are included.
  Cycle active_end() const { return active_end_; }
  // Zeroes the counters (a new measurement on the same wafer); the activity end stays.
  void reset_counters() {
    counters = {};
    activity_seen_ = 0;
  }
  bool idle() const;
  // What this PE waits for at cycle `now`, in a line for a hang or cycle-limit diagnosis ("" when
  // idle): its running ops, the main thread's own work, and what is queued behind them, by name.
  std::string waiting_on(Cycle now) const;

  // Read-only views for observers (activity dumps, traces).
  Cycle busy_until() const { return busy_until_; }
  const TaskCost& last_task() const { return last_task_; }
  // Cycles the last task's work has been paused so far, one for each a microthread took the
  // datapath from it: its receive, fmac and move cycles elapse that much later than back to back.
  uint32_t last_task_paused() const { return last_task_paused_; }
  bool stalled() const { return stall_from_ != kNever; }
  uint32_t input_occupancy() const {
    uint32_t n = 0;
    for (const auto& q : queues_) n += q.count;
    return n;
  }
  uint64_t outbox_wavelets() const;

 private:
  friend class PeContext;
  // The counters whose change marks a cycle of activity (the dump's test, ActivityRecorder).
  uint64_t activity_sum() const {
    return counters.receive_cycles + counters.fmac_cycles + counters.move_cycles + counters.send_cycles +
           counters.stall_send_cycles + counters.setup_cycles + counters.wavelets_in;
  }
  // An operation in progress on a thread.
  struct ActiveOp {
    DsdOp op;
    uint32_t done = 0;         // elements done (memory ops: datapath cycles done)
    uint32_t cycles = 0;       // memory ops on a microthread: datapath cycles it needs
    Cycle ready = 0;           // first cycle it may use the datapath (after its DSD setup)
    Cycle started = 0;
    uint32_t fmac = 0, move = 0;  // datapath cycles so far, by class (for the trace)
    uint8_t task = 0;          // the task that issued it, for error messages
    bool task_local = false;
    bool memory_only = false;
    // Noted by claim(), so a thread's per-cycle question (can it go on?) is a mask test: the
    // colours it reads from the fabric, and the output queue it writes (-1: none).
    int8_t outq = -1;
    uint32_t fabin = 0;
  };
  // Items of the main thread's queue: an op, or a task action issued after one.
  struct MainItem {
    enum Kind : uint8_t { Op, Activate, Block, Unblock } kind = Op;
    TaskRef task;
    ActiveOp op;
  };
  enum class Progress : uint8_t { Done, Moved, NotReady, NoInput, NoRoom };

  void ingest(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  bool main_can_start() const;
  void start_main(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  void run_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  Progress can_progress(const ActiveOp& a, Cycle now) const;
  Progress progress(ActiveOp& a, uint8_t thread, TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  void finish_op(ActiveOp& a, uint8_t thread, Cycle end);
  // Whether an active op is still being set up at cycle c (its first element not yet due).
  bool in_setup(Cycle c) const;
  // A step after a sleep: counts the send stall, the RAMP-up link's wait and the setup it slept through.
  void settle_sleep(Cycle now);
  // What an op does on completion: activate or unblock the task its options name.
  void complete(const OpOptions& o);
  uint32_t run_memory_op(const DsdOp& op, const MachineSpec& spec, uint32_t& fmac, uint32_t& move);
  bool drain(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec);
  void apply(const MainItem& item);
  // An op becomes active: it owns the colours it reads and writes until it finishes.
  void claim(ActiveOp& a);
  void log(const TaskCost& c) {
    if (task_log) task_log->push_back(c);
  }
  // Asks the scheduler to step this tile at cycle c. A step often asks for the same cycle more
  // than once (a credit sent back, then the next cycle's work); the scheduler keeps one wake-up
  // until that cycle is stepped, so a repeat of the last cycle this PE asked for is dropped here.
  void wake(TileId self, Cycle c, Scheduler& s) {
    if (c == woken_for_) return;
    woken_for_ = c;
    s.schedule(self, c);
  }
  [[noreturn]] void fail(const ActiveOp* a, const std::string& what) const;
  std::string task_label(bool local, uint8_t id) const;

  std::vector<PeInputQueue> queues_;
  std::array<int8_t, MachineSpec::kMaxColours> queue_of_{};  // colour -> input queue, -1 none
  std::vector<PeOutputQueue> outq_;
  std::array<int8_t, MachineSpec::kMaxColours> outq_of_{};   // colour -> output queue, -1 none
  std::array<uint8_t, MachineSpec::kMaxColours> credits_{};  // toward router lanes with rx RAMP
  Cycle dispatch_at_ = 0;       // an async op issued now starts after the task's immediate work
  // The main thread's streaming op (main_op_, allocated on first use: most PEs of a full wafer
  // never stream) and the items queued behind it: a ring grown as a task queues more (2, 4, 8,
  // then the limit's 16 items), since most tasks queue one or two. A PE's slots are written
  // during the run that first needs them, each a page the host faults in then: allocated whole
  // (16 items and 16 microthreads, 4.2 KiB a PE) they were 66-70 thousand faults, a quarter to a
  // half of a GEMV 4096² run on 256x256 PEs (docs/performance-history.md, eighteenth round).
  // Microthreads 0 .. uts_slots_ - 1 (uts_) are allocated up to the highest one used so far (the
  // lowest free one is taken unless an op names one, so mostly one or two).
  std::vector<MainItem> fifo_;  // ring buffer of fifo_.size() items
  // Room for microthread k (its slot, and those below it, allocated), and for one more item in
  // the main thread's queue. Called only where no reference into either is held.
  ActiveOp& microthread_slot(uint8_t k);
  MainItem& next_fifo_item();
  // The task running its body (for the ops it issues).
  uint8_t task_id_ = 0;
  bool task_local_ = false;
  bool in_task_ = false;
  uint32_t task_fmac_ = 0, task_move_ = 0;  // cycles of the ops the running body ran at once
  TaskCost last_task_;
  uint32_t last_task_paused_ = 0;
};

// The API a task is written against: CSL's DSD builtins, task control, and the older helpers
// (fmac, add, mov, send) kept as the DSD ops they are.
class PeContext {
 public:
  PeContext(Pe& pe, const MachineSpec& spec, Cycle now) : pe_(pe), spec_(spec), now_(now) {}

  Coord coord() const { return pe_.coord; }
  // The cycle this task started (what CSL's <time> module's timestamp reads).
  Cycle now() const { return now_; }
  // A variable at a byte offset of this PE's SRAM. An offset beyond it reaches the next PE's SRAM
  // in the arena (or past the wafer's): checked in the sanitizer builds (WSE_CHECK_INVARIANTS),
  // where a kernel's tests then catch it, not in a release build, where the test cost 13% of an
  // FC training step (1.84 against 1.62 s: the kernels' tasks reach their variables through it
  // millions of times a step). What the pointer is indexed with after that is the program's own C++.
  template <class T>
  T* at(uint32_t byte_offset) {
#ifdef WSE_CHECK_INVARIANTS
    if (uint64_t(byte_offset) + sizeof(T) > pe_.sram.capacity()) at_beyond(byte_offset, sizeof(T));
#endif
    return reinterpret_cast<T*>(pe_.sram.base() + byte_offset);
  }
  template <class T>
  T* at(SramRef r) { return at<T>(r.offset); }
  uint32_t offset_of(const void* p) const { return uint32_t(static_cast<const uint8_t*>(p) - pe_.sram.base()); }
  // A local or data task a task action or an op's completion names: bound by the program (a
  // local one), on a colour the machine has (a data one). `what`: the action, for the message.
  void check_task(const TaskRef& t, const char* what) const;
  // What is wrong with such a reference ("" if nothing): `what` the action, `when` after the
  // task's name (" on completion" for an op's).
  std::string task_problem(const TaskRef& t, const char* what, const char* when) const;
  Dsd mem(const float* p, uint32_t n, int32_t stride = 1) const { return mem1d(offset_of(p), n, stride); }
  Dsd mem(const _Float16* p, uint32_t n, int32_t stride = 1) const { return mem1d(offset_of(p), n, stride); }

  // ---- fp32 (s) ----
  void fmovs(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Mov, F, F, F>("fmovs", dst, src, {}, 0, o); }
  void fmovs(Dsd dst, float v, OpOptions o = {}) { fmovs(dst, scalar_f32(v), o); }
  void fadds(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Add, F, F, F>("fadds", dst, a, b, 0, o); }
  void fsubs(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Sub, F, F, F>("fsubs", dst, a, b, 0, o); }
  void fmuls(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Mul, F, F, F>("fmuls", dst, a, b, 0, o); }
  void fmaxs(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Max, F, F, F>("fmaxs", dst, a, b, 0, o); }
  void fnegs(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Neg, F, F, F>("fnegs", dst, src, {}, 0, o); }
  // dst = a + b * s
  void fmacs(Dsd dst, Dsd a, Dsd b, float s, OpOptions o = {}) {
    builtin<DsdOpCode::Mac, F, F, F>("fmacs", dst, a, b, std::bit_cast<uint32_t>(s), o);
  }
  // ---- fp16 (h) ----
  void fmovh(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Mov, H, H, H>("fmovh", dst, src, {}, 0, o); }
  void faddh(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Add, H, H, H>("faddh", dst, a, b, 0, o); }
  void fsubh(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Sub, H, H, H>("fsubh", dst, a, b, 0, o); }
  void fmulh(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Mul, H, H, H>("fmulh", dst, a, b, 0, o); }
  void fmaxh(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Max, H, H, H>("fmaxh", dst, a, b, 0, o); }
  void fnegh(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Neg, H, H, H>("fnegh", dst, src, {}, 0, o); }
  void fmach(Dsd dst, Dsd a, Dsd b, _Float16 s, OpOptions o = {}) {
    builtin<DsdOpCode::Mac, H, H, H, H>("fmach", dst, a, b, std::bit_cast<uint16_t>(s), o);
  }
  // ---- mixed (hs): fp16 operands, fp32 accumulation ----
  // dst (fp32) = a (fp32) + b (fp16) * s (fp16)
  void fmachs(Dsd dst, Dsd a, Dsd b, _Float16 s, OpOptions o = {}) {
    builtin<DsdOpCode::Mac, F, F, H, H>("fmachs", dst, a, b, std::bit_cast<uint16_t>(s), o);
  }
  // dst (fp32) = a (fp32) + b (fp16)
  void faddhs(Dsd dst, Dsd a, Dsd b, OpOptions o = {}) { builtin<DsdOpCode::Add, F, F, H>("faddhs", dst, a, b, 0, o); }
  void fh2s(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Cvt, F, H, H>("fh2s", dst, src, {}, 0, o); }
  void fs2h(Dsd dst, Dsd src, OpOptions o = {}) { builtin<DsdOpCode::Cvt, H, F, F>("fs2h", dst, src, {}, 0, o); }

  // ---- tasks ----
  void activate(uint8_t local_task);
  void block(TaskRef t);
  void unblock(TaskRef t);

  // ---- the older helpers, as the DSD ops they are ----
  // y[i] += a * x[i], i < n (fp32, in memory).
  void fmac(float* y, const float* x, float a, uint32_t n) {
    if (n) fmacs(mem(y, n), mem(y, n), mem(x, n), a);
  }
  void axpy(float* y, float a, const float* x, uint32_t n) { fmac(y, x, a, n); }
  // y[i] += x[i].
  void add(float* y, const float* x, uint32_t n) {
    if (n) fadds(mem(y, n), mem(y, n), mem(x, n));
  }
  void mov(float* dst, const float* src, uint32_t n) {
    if (n) fmovs(mem(dst, n), mem(src, n));
  }
  // An elementwise step over n elements that is no single builtin (relu, a mask, a softmax
  // step): its effect is the caller's C++ code, run now; its cost is charged like fadds.
  void elementwise(uint32_t n);
  // Sends on colour c: one value, or n words of SRAM read as they leave.
  void send(Colour c, float v) { fmovs(fabout(c, 1), v); }
  void send(Colour c, const float* src, uint32_t n) {
    if (n) fmovs(fabout(c, n), mem(src, n));
  }
  void send_control(Colour c, uint32_t payload) { builtin<DsdOpCode::Mov, F, F, F>("mov32", fabout(c, 1, {false, true}), raw(payload), {}, 0, {}); }

  uint32_t cost() const { return cost_; }

 private:
  static constexpr ElemType F = ElemType::F32, H = ElemType::F16;
  static Dsd raw(uint32_t bits) {
    Dsd d{DsdKind::Scalar};
    d.offset = bits;
    return d;
  }
  // A builtin: dst = op(a, b, scalar) over dst.length elements, of element types TD, TA, TB and
  // TS (the scalar's); b is absent (kind None) for one-operand ops, whose TB is TA. Most ops a
  // task issues are small, in memory, synchronous and issued while nothing streams: those run
  // here, inlined with their code and types known, as issue() would run them (same elements,
  // same cycles and counters). Everything else, and every op issue() would reject, goes through
  // issue(), which checks it and says what is wrong.
  template <DsdOpCode C, ElemType TD, ElemType TA, ElemType TB, ElemType TS = ElemType::F32>
  [[gnu::always_inline]] void builtin(const char* name, const Dsd& dst, const Dsd& a, const Dsd& b, uint32_t scalar, const OpOptions& o) {
    const uint32_t n = dst.length;
    // The common case, a memory op that runs now and does nothing on completion, runs here; anything
    // else (or anything issue() would refuse) goes through issue().
    // (A scalar of the op's type; an op of two sources given both: issue() names what is wrong.)
    constexpr bool kBinary = C != DsdOpCode::Mov && C != DsdOpCode::Neg && C != DsdOpCode::Cvt;
    constexpr DsdKind kScalarA = TA == ElemType::F16 ? DsdKind::ScalarF16 : DsdKind::Scalar;
    constexpr DsdKind kScalarB = TB == ElemType::F16 ? DsdKind::ScalarF16 : DsdKind::Scalar;
    constexpr DsdKind kNoB = kBinary ? static_cast<DsdKind>(0xff) : DsdKind::None;  // no b: only a one-source op (0xff is no kind)
    if (!o.async && o.microthread < 0 && o.activate.kind == TaskRef::None && o.unblock.kind == TaskRef::None &&
        !pe_.fifo_count_ && !pe_.main_active_ && dst.kind == DsdKind::Mem && n && n <= 0xffffu &&
        in_sram(dst, n, TD) && (a.kind == kScalarA || (a.kind == DsdKind::Mem && a.length == n && in_sram(a, n, TA))) &&
        (b.kind == kNoB || b.kind == kScalarB || (b.kind == DsdKind::Mem && b.length == n && in_sram(b, n, TB)))) {
      dsd_mem_elements<C, TD, TA, TB, TS>(pe_.sram.base(), dst, a, b, scalar, n);
      ran_now(C, n, dsd_simd_width(C, TD, TA, TB, dst, a, b, spec_));
      return;
    }
    DsdOp op;
    op.code = C, op.name = name, op.dst = dst, op.a = a, op.b = b;
    op.t_dst = TD, op.t_a = TA, op.t_b = TB, op.t_s = TS, op.scalar = scalar;
    issue(op, o);
  }
  // Whether memory DSD d's n elements lie in this PE's SRAM, each at a multiple of its size
  // (issue() says why not). (Inlined: the kernels' per-weight ops come through here millions of
  // times a step.)
  [[gnu::always_inline]] bool in_sram(const Dsd& d, uint32_t n, ElemType t) const {
    const int64_t first = d.offset, last = mem_elem_offset(d, n - 1, t);
    return (d.offset & (elem_bytes(t) - 1)) == 0 && std::min(first, last) >= 0 &&
           std::max(first, last) + elem_bytes(t) <= int64_t(pe_.sram.capacity());
  }
  // The counters of a memory op of n elements at SIMD width w that ran at once (as run_memory_op
  // keeps them): its cycles are the task's.
  [[gnu::always_inline]] void ran_now(DsdOpCode c, uint32_t n, uint32_t w) {
    const uint32_t cycles = (n + w - 1) / w;
    if (is_multiply(c)) {
      pe_.counters.fmac_cycles += cycles, pe_.task_fmac_ += cycles;
      if (c == DsdOpCode::Mac) pe_.counters.macs += n;
    } else {
      pe_.counters.move_cycles += cycles, pe_.task_move_ += cycles;
    }
    cost_ += cycles;
    ++pe_.counters.dsd_ops;
  }
  void issue(DsdOp op, const OpOptions& o);
  void issue_item(int kind, TaskRef t);
  [[noreturn]] void at_beyond(uint32_t byte_offset, size_t bytes) const;

  Pe& pe_;
  const MachineSpec& spec_;
  Cycle now_;
  uint32_t cost_ = 0;
};

}  // namespace wse
