// DSD operations on the PE: what they compute (against the host's arithmetic), what they cost
// (the SDK's SIMD widths and stride limits), how streaming ops, microthreads and blocked colours
// behave in time, and the errors a bad program gets.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "pe/dsd_op.hpp"
#include "pe_test_support.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

// ---- memory ops: results and costs ----

struct MemVars {
  float a[16], b[16], y[16], st[16], sy[16], mx[16], ng[16], acc[2];
  _Float16 h1[16], h2[16], hy[16];
  float strided[72];
};

void memory_ops(PeContext& ctx) {
  auto& v = *ctx.at<MemVars>(0u);
  auto d = [&](float* p, uint32_t n, int32_t stride = 1) { return ctx.mem(p, n, stride); };
  auto h = [&](_Float16* p, uint32_t n) { return ctx.mem(p, n); };
  ctx.fmacs(d(v.y, 10), d(v.a, 10), d(v.b, 10), 2.0f);           // 10 fmac cycles (fp32: width 1)
  ctx.fadds(d(v.st, 10), d(v.a, 10), d(v.b, 10));                // 5 move cycles (width 2)
  ctx.fmach(h(v.hy, 10), h(v.h1, 10), h(v.h2, 10), _Float16(1.5f));  // 3 fmac cycles (width 4)
  ctx.fmachs(d(v.sy, 10), d(v.a, 10), h(v.h2, 10), _Float16(0.5f));  // 5 fmac cycles (width 2)
  ctx.fmaxs(d(v.mx, 10), d(v.a, 10), d(v.b, 10));                // 10 move cycles (not SIMD)
  ctx.fnegs(d(v.ng, 10), d(v.a, 10));                            // 5 move cycles
  ctx.fmovs(d(v.strided, 8, 2), d(v.a, 8));                      // stride 2: full width, 4 cycles
  ctx.fmovs(d(v.strided + 1, 8, 4), d(v.a, 8));                  // stride % 8 == 4: width 2, 4 cycles
  ctx.fmovs(d(v.strided + 3, 8, 8), d(v.a, 8));                  // stride % 8 == 0: width 1, 8 cycles
  ctx.fadds(d(v.acc, 10, 0), d(v.acc, 10, 0), d(v.a, 10));       // a reduction: width 1, 10 cycles
}

// The datapath's own fp32 -> fp16 rounding (pe/dsd_op.hpp, bit arithmetic) against the compiler's
// _Float16 conversion: every half value and its neighbours, the ties between adjacent halves
// (round to nearest even), the overflow and subnormal edges, and every 256th float. (All 2^32
// floats agreed when it was written; that sweep takes minutes.)
TEST(PeDsd, HalfRoundingIsTheCompilersBitForBit) {
  auto same = [](float f) {
    const uint16_t want = std::bit_cast<uint16_t>(_Float16(f));
    const uint16_t got = wse::float_to_half_bits(f);
    if (got != want) ADD_FAILURE() << std::hex << "float bits 0x" << std::bit_cast<uint32_t>(f) << ": 0x" << got << ", expected 0x" << want;
    return got == want;
  };
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float v = float(std::bit_cast<_Float16>(uint16_t(h)));
    const uint32_t b = std::bit_cast<uint32_t>(v);
    for (int64_t d = -2; d <= 2; ++d) ASSERT_TRUE(same(std::bit_cast<float>(uint32_t(int64_t(b) + d))));
    // The midpoint to the next half up, and one float either side of it.
    const float next = float(std::bit_cast<_Float16>(uint16_t(h + 1)));
    if ((h & 0x7fff) < 0x7bff && std::isfinite(next)) {
      const float mid = v + (next - v) / 2;
      const uint32_t m = std::bit_cast<uint32_t>(mid);
      for (int64_t d = -1; d <= 1; ++d) ASSERT_TRUE(same(std::bit_cast<float>(uint32_t(int64_t(m) + d))));
    }
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e9f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f, 0.0f, -0.0f}) {
    ASSERT_TRUE(same(f));
    ASSERT_TRUE(same(-f));
  }
  for (uint64_t i = 0; i < (uint64_t(1) << 32); i += 256) {
    const float f = std::bit_cast<float>(uint32_t(i));
    if (!std::isnan(f)) {
      ASSERT_TRUE(same(f));
    }
  }
}

// `ctx.elementwise(n)` (C++ work charged as moves) takes ceil(n / move_simd_fp32) cycles
// (docs/pe-programming.md): 21 elements are 11 on a WSE-2 (2 wide) and 6 on a WSE-3 (4 wide).
// Found by a mutation test: rounding down passed, as the loss task's counts are all even.
uint32_t g_elementwise_cost = 0;
void elementwise_21(PeContext& ctx) {
  const uint32_t before = ctx.cost();
  ctx.elementwise(21);
  g_elementwise_cost = ctx.cost() - before;
}
TEST(PeDsd, ElementwiseWorkRoundsItsCyclesUp) {
  for (const MachineSpec& spec : {test::wse2(), test::wse3()}) {
    Wafer wafer(spec, {1, 1});
    Program p;
    p.name = "elementwise";
    p.start_task = p.local(elementwise_21);
    wafer.load({0, 0}, &p);
    wafer.finalize(1);
    g_elementwise_cost = 0;
    wafer.run(10'000);
    const uint32_t want = spec.move_simd_fp32 == 2 ? 11u : 6u;
    EXPECT_EQ(spec.move_simd_fp32, spec.name == "wse2" ? 2u : 4u);
    EXPECT_EQ(g_elementwise_cost, want) << spec.name;
    EXPECT_EQ(wafer.pe({0, 0}).counters.move_cycles, want) << spec.name;
  }
}

// A memory op on a microthread (or behind a stream) is costed by run_memory_op, not the inlined
// path the test below takes: 10 fp16 multiply-adds at a width of 4 are 3 cycles, 10 fp32 adds at
// 2 are 5, 9 of them 5 too (a mutation test's survivor, forty-fourth round: rounded down there,
// 2 cycles for 10 and 4 for 9, passed every test).
void async_memory_ops(PeContext& ctx) {
  auto& v = *ctx.at<MemVars>(0u);
  ctx.fmach(ctx.mem(v.hy, 10), ctx.mem(v.h1, 10), ctx.mem(v.h2, 10), _Float16(1.5f), {.async = true, .microthread = 0});
  ctx.fadds(ctx.mem(v.st, 9), ctx.mem(v.a, 9), ctx.mem(v.b, 9), {.async = true, .microthread = 1});
}
TEST(PeDsd, AMemoryOpOnAMicrothreadRoundsItsCyclesUp) {
  Wafer wafer(test::wse2(), {1, 1});
  Program p;
  p.name = "async_memory_ops";
  p.start_task = p.local(async_memory_ops);
  p.microthreads = 2;
  wafer.load({0, 0}, &p);
  wafer.allocate({0, 0}, "vars", sizeof(MemVars));
  wafer.finalize(1);
  wafer.run(10'000);
  const PeCounters& c = wafer.pe({0, 0}).counters;
  EXPECT_EQ(c.fmac_cycles, 3u);  // ceil(10 / 4)
  EXPECT_EQ(c.move_cycles, 5u);  // ceil(9 / 2)
}

TEST(PeDsd, MemoryOpsComputeLikeTheHostAndCostTheirSimdWidth) {
  Wafer wafer(test::wse2(), {1, 1});
  Program p;
  p.name = "memory_ops";
  p.start_task = p.local(memory_ops);
  wafer.load({0, 0}, &p);
  wafer.allocate({0, 0}, "vars", sizeof(MemVars));
  auto& v = *reinterpret_cast<MemVars*>(wafer.pe({0, 0}).sram.base());
  std::memset(&v, 0, sizeof v);
  for (int i = 0; i < 16; ++i) {
    v.a[i] = 0.5f * float(i) - 3.0f + 1.0f / 3.0f;
    v.b[i] = 1.25f - 0.125f * float(i) + 1.0f / 7.0f;
    v.h1[i] = _Float16(0.1f * float(i) - 0.7f);
    v.h2[i] = _Float16(0.3f - 0.05f * float(i));
  }
  const MemVars in = v;
  wafer.finalize(1);
  WaferRun run = wafer.run(10'000);

  const PeCounters& c = wafer.pe({0, 0}).counters;
  EXPECT_EQ(c.fmac_cycles, 10u + 3 + 5);
  EXPECT_EQ(c.macs, 30u);
  EXPECT_EQ(c.move_cycles, 5u + 10 + 5 + 4 + 4 + 8 + 10);
  EXPECT_EQ(c.dsd_ops, 10u);
  EXPECT_EQ(run.cycles, 64u + 1);  // the task's 64 cycles, then the PE looks for work
  for (int i = 0; i < 10; ++i) {
    const float prod = in.b[i] * 2.0f;  // rounded before the add: no fused multiply-add
    EXPECT_EQ(v.y[i], in.a[i] + prod) << i;
    EXPECT_EQ(v.st[i], in.a[i] + in.b[i]) << i;
    EXPECT_EQ(std::bit_cast<uint16_t>(v.hy[i]), std::bit_cast<uint16_t>(_Float16(float(in.h1[i]) + float(in.h2[i]) * 1.5f))) << i;
    EXPECT_EQ(v.sy[i], in.a[i] + float(in.h2[i]) * 0.5f) << i;  // fp16 product exact in fp32, one rounding
    EXPECT_EQ(v.mx[i], std::max(in.a[i], in.b[i])) << i;
    EXPECT_EQ(v.ng[i], -in.a[i]) << i;
  }
  for (int i = 0; i < 8; ++i) {  // (the three moves' elements never share a slot: 2i, 1 + 4i, 3 + 8i)
    EXPECT_EQ(v.strided[2 * i], in.a[i]) << i;
    EXPECT_EQ(v.strided[1 + 4 * i], in.a[i]) << i;
    EXPECT_EQ(v.strided[3 + 8 * i], in.a[i]) << i;
  }
  float sum = 0;
  for (int i = 0; i < 10; ++i) sum += in.a[i];
  EXPECT_EQ(v.acc[0], sum);
}

// The SDK's SIMD-mode table for a memory op, hand-read (docs/machine-spec.md, note 6): @fadds is
// 2 wide on WSE-2 and 4 on WSE-3; a stride of 8, 16, ... (the same bank every element) 1; a
// stride of 1, 4 or 7 mod 8 other than 1 itself 2; a stride-0 destination (each element adds to
// the one before) 1; a stride-0 source (one value, read once) not limited.
TEST(PeDsd, SimdWidthFollowsTheSdksStrideTable) {
  for (const MachineSpec& s : {test::wse2(), test::wse3()}) {
    const uint32_t full = s.move_simd_fp32;
    auto width = [&](int32_t dst_stride, int32_t b_stride) {
      return dsd_simd_width(DsdOpCode::Add, ElemType::F32, ElemType::F32, ElemType::F32, mem1d(0, 8, dst_stride), mem1d(64, 8),
                            mem1d(128, 8, b_stride), s);
    };
    EXPECT_EQ(width(1, 1), full) << s.name;
    EXPECT_EQ(width(1, 0), full) << s.name;  // a broadcast source
    EXPECT_EQ(width(0, 1), 1u) << s.name;    // a reduction
    for (int32_t st : {8, 16, -8}) EXPECT_EQ(width(1, st), 1u) << s.name << " stride " << st;
    for (int32_t st : {9, 4, 7, 12, -1}) EXPECT_EQ(width(1, st), std::min(full, 2u)) << s.name << " stride " << st;
    for (int32_t st : {2, 3, 5, 6, 10}) EXPECT_EQ(width(1, st), full) << s.name << " stride " << st;
  }
}

// Every memory builtin's cost at 64 elements, stride 1, against the SDK's SIMD-mode table typed
// in by hand from the page (CSL *Appendix – SIMD Mode*, sdk.cerebras.net/csl/language/appendix,
// 2.10.0), WSE-2 / WSE-3: fmovs fadds fsubs fnegs 2/4, fmovh faddh fsubh fmulh fnegh fmach 4/8,
// fmachs faddhs 2/4, fmaxh 1/8, fmaxs 1/4, fh2s fs2h 1/4; fmacs and fmuls are not in the table
// (1). Until the forty-second round `fmaxh` took the fp16 elementwise width (4 on WSE-2),
// `fmaxs` the fmacs width (1 on WSE-3) and the conversions the fmovs width (2 on WSE-2).
struct TableVars {
  float a[64], b[64], y[64];
  _Float16 h1[64], h2[64], hy[64];
};
constexpr int kTableOps = 18;
uint32_t g_table_cost[kTableOps];

void every_builtin(PeContext& ctx) {
  auto& v = *ctx.at<TableVars>(0u);
  const Dsd a = ctx.mem(v.a, 64), b = ctx.mem(v.b, 64), y = ctx.mem(v.y, 64);
  const Dsd h1 = ctx.mem(v.h1, 64), h2 = ctx.mem(v.h2, 64), hy = ctx.mem(v.hy, 64);
  uint32_t before = ctx.cost();
  int i = 0;
  auto mark = [&] { g_table_cost[i++] = ctx.cost() - before, before = ctx.cost(); };
  ctx.fmovs(y, a), mark();
  ctx.fadds(y, a, b), mark();
  ctx.fsubs(y, a, b), mark();
  ctx.fmuls(y, a, b), mark();
  ctx.fmaxs(y, a, b), mark();
  ctx.fnegs(y, a), mark();
  ctx.fmacs(y, a, b, 2.0f), mark();
  ctx.fmovh(hy, h1), mark();
  ctx.faddh(hy, h1, h2), mark();
  ctx.fsubh(hy, h1, h2), mark();
  ctx.fmulh(hy, h1, h2), mark();
  ctx.fmaxh(hy, h1, h2), mark();
  ctx.fnegh(hy, h1), mark();
  ctx.fmach(hy, h1, h2, _Float16(0.5f)), mark();
  ctx.fmachs(y, a, h2, _Float16(0.5f)), mark();
  ctx.faddhs(y, a, h2), mark();
  ctx.fh2s(y, h1), mark();
  ctx.fs2h(hy, a), mark();
}

TEST(PeDsd, EveryBuiltinRunsAtItsWidthInTheSdksTable) {
  const char* names[kTableOps] = {"fmovs", "fadds", "fsubs", "fmuls", "fmaxs", "fnegs", "fmacs", "fmovh", "faddh",
                                  "fsubh", "fmulh", "fmaxh", "fnegh", "fmach", "fmachs", "faddhs", "fh2s", "fs2h"};
  const uint32_t wse2[kTableOps] = {2, 2, 2, 1, 1, 2, 1, 4, 4, 4, 4, 1, 4, 4, 2, 2, 1, 1};
  const uint32_t wse3[kTableOps] = {4, 4, 4, 1, 4, 4, 1, 8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4};
  for (const auto& [spec, width] : {std::pair{test::wse2(), wse2}, std::pair{test::wse3(), wse3}}) {
    Wafer wafer(spec, {1, 1});
    Program p;
    p.name = "every_builtin";
    p.start_task = p.local(every_builtin);
    wafer.load({0, 0}, &p);
    wafer.allocate({0, 0}, "vars", sizeof(TableVars));
    std::memset(wafer.pe({0, 0}).sram.base(), 0, sizeof(TableVars));
    std::fill(std::begin(g_table_cost), std::end(g_table_cost), 0u);
    wafer.finalize(1);
    wafer.run(10'000);
    for (int i = 0; i < kTableOps; ++i) EXPECT_EQ(g_table_cost[i], 64 / width[i]) << spec.name << " " << names[i];
  }
}

// ---- streaming ops and threads on a 2 x 1 row ----

constexpr Colour kC = 3;
constexpr uint32_t kN = 100;

struct RowVars {
  float buf[kN];
  float acc[kN];
  uint64_t done_at, finish_at;
  uint32_t tasks_seen, seen[16];
  float chain;
};

RowVars& row(PeContext& ctx) { return *ctx.at<RowVars>(0u); }
void send_all(PeContext& ctx) { ctx.fmovs(fabout(kC, kN), ctx.mem(row(ctx).buf, kN)); }
void record_done(PeContext& ctx) { row(ctx).done_at = ctx.now(); }
void record_finish(PeContext& ctx) { row(ctx).finish_at = ctx.now(); }

struct Row {
  Wafer wafer{test::wse2(), {2, 1}};
  Program sender, receiver;
  explicit Row(LocalTask receive_start, uint32_t send = kN) {
    Mesh& m = wafer.mesh();
    m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
    m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
    sender.name = "sender";
    sender.start_task = sender.local(send_all, "send_all");
    receiver.name = "receiver";
    receiver.start_task = receiver.local(receive_start, "start");
    receiver.local(record_done, "done");
    receiver.local(record_finish, "finish");
    for (uint32_t x = 0; x < 2; ++x) {
      wafer.load({x, 0}, x ? &receiver : &sender);
      wafer.allocate({x, 0}, "vars", sizeof(RowVars));
      auto& v = *reinterpret_cast<RowVars*>(wafer.pe({x, 0}).sram.base());
      std::memset(&v, 0, sizeof v);
      for (uint32_t i = 0; i < kN; ++i) v.buf[i] = x ? 0.0f : float(i) + 0.25f, v.acc[i] = x ? 1000.0f : 0.0f;
    }
    (void)send;
  }
  RowVars& vars(uint32_t x) { return *reinterpret_cast<RowVars*>(wafer.pe({x, 0}).sram.base()); }
  // Runs the row to its end; with `log`, the receiver's tasks and ops are recorded there.
  void run(std::vector<TaskCost>* log = nullptr) {
    wafer.pe({1, 0}).task_log = log;
    wafer.finalize(1);
    wafer.run(100'000);
    wafer.pe({1, 0}).task_log = nullptr;
  }
};

void add_stream(PeContext& ctx) {
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
  ctx.activate(1);  // runs after the op: the main thread takes its queue in order
}

TEST(PeDsd, AStreamingOpMovesOneElementPerCycleAfterItsSetup) {
  Row r(add_stream);
  r.receiver.block(kC);
  r.run();
  for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(r.vars(1).acc[i], 1000.0f + (float(i) + 0.25f)) << i;
  // Both ops start at cycle 1 (after their start tasks) and are set up 44 cycles later: the first
  // element leaves at 45, reaches the output queue's head at 46 (pipeline 1), the router at 48
  // (ramp 2), the next router at 49 (hop 1) and the receiving PE at 51 (ramp 2). One element a
  // cycle: the last at 150, the op done at 151, when the done task records the cycle.
  EXPECT_EQ(r.vars(1).done_at, 51u + kN);
  const PeCounters& c = r.wafer.pe({1, 0}).counters;
  EXPECT_EQ(c.move_cycles, kN);  // one datapath cycle per element
  EXPECT_EQ(c.receive_cycles, 0u);  // no data task: the op consumed the wavelets
  EXPECT_EQ(r.wafer.pe({0, 0}).counters.send_cycles, kN);
  // Each PE's op was set up from cycle 1 to 44 with nothing else to do: 44 setup cycles each,
  // counted as setup, not as waiting for input.
  EXPECT_EQ(c.setup_cycles, 44u);
  EXPECT_EQ(r.wafer.pe({0, 0}).counters.setup_cycles, 44u);
}

// The receiver moves the stream into SRAM on a microthread while its main thread runs 1000 cycles
// of fp32 FMAC work: the two overlap, sharing the datapath a cycle at a time.
void overlap_start(PeContext& ctx) {
  RowVars& v = row(ctx);
  ctx.fmovs(ctx.mem(v.buf, kN), fabin(kC, kN), {.async = true, .activate = TaskRef::local(1)});
  for (int k = 0; k < 10; ++k) ctx.fmacs(ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), 0.5f);  // 1000 cycles
  ctx.activate(2);
}

TEST(PeDsd, AnAsyncOpRunsOnAMicrothreadBesideTheMainThread) {
  Row r(overlap_start);
  r.receiver.block(kC);
  std::vector<TaskCost> log;
  r.run(&log);
  for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(r.vars(1).buf[i], float(i) + 0.25f) << i;
  // The op on microthread 0 ran from its first element (51) to its last (150): done at 151.
  const TaskCost* op = nullptr;
  for (const TaskCost& t : log)
    if (t.op && t.thread == 1) op = &t;
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(std::string(op->op), "fmovs");
  EXPECT_EQ(op->start, 51u);
  EXPECT_EQ(op->end(), 51u + kN);
  EXPECT_EQ(op->move, kN);
  // The main thread's 1000 cycles of SIMD work lost the 100 cycles the microthread used: it is
  // free at 1100, not at 1000 + 151. The tasks the op and the main task activated run then, one
  // after the other, lowest id first (a local task takes at least a cycle).
  EXPECT_EQ(r.vars(1).done_at, 1000u + kN);
  EXPECT_EQ(r.vars(1).finish_at, 1000u + kN + 1);
  EXPECT_EQ(r.wafer.pe({1, 0}).counters.fmac_cycles, 1000u);
  // The microthread's op was set up (cycles 0-43) while the main thread did its SIMD work: no
  // cycle of it is a setup cycle (the datapath was busy). The sender's op had nothing beside it.
  EXPECT_EQ(r.wafer.pe({1, 0}).counters.setup_cycles, 0u);
  EXPECT_EQ(r.wafer.pe({0, 0}).counters.setup_cycles, 44u);
}

// An async op with a fabric operand issued behind a streaming op waits in the main thread's queue,
// and the microthread that takes it from there sets it up as a directly issued one is (44 cycles
// from its launch to its first element, docs/machine-spec.md's fabric_dsd_setup_cycles). Found by
// a mutation test: launched from the queue without its setup, it ran 44 cycles early, and no test
// saw it. The receiver takes the stream's first half synchronously, the second half async.
void half_then_async_half(PeContext& ctx) {
  RowVars& v = row(ctx);
  ctx.fmovs(ctx.mem(v.acc, kN / 2), fabin(kC, kN / 2));
  ctx.fmovs(ctx.mem(v.buf, kN / 2), fabin(kC, kN / 2), {.async = true});  // queued behind the first
}

TEST(PeDsd, AnAsyncOpLaunchedFromTheQueueIsSetUpLikeOneIssuedDirectly) {
  Row r(half_then_async_half);
  r.receiver.block(kC);
  std::vector<TaskCost> log;
  r.run(&log);
  for (uint32_t i = 0; i < kN / 2; ++i) {
    EXPECT_EQ(r.vars(1).acc[i], float(i) + 0.25f) << i;
    EXPECT_EQ(r.vars(1).buf[i], float(kN / 2 + i) + 0.25f) << i;
  }
  const TaskCost *first = nullptr, *second = nullptr;
  for (const TaskCost& t : log)
    if (t.op && t.thread == 0) first = &t;
    else if (t.op && t.thread == 1) second = &t;
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  // The first half from 51 (as AStreamingOpMovesOneElementPerCycleAfterItsSetup), one a cycle;
  // the second op launched from the queue when it ends, its first element 44 cycles later (the
  // stream has waited in the input queue since), one a cycle after it.
  EXPECT_EQ(first->start, 51u);
  EXPECT_EQ(first->end(), 51u + kN / 2);
  EXPECT_EQ(second->start, first->end() + test::wse2().fabric_dsd_setup_cycles);
  EXPECT_EQ(second->end(), second->start + kN / 2);
}

// A send stall is a cycle the datapath has nothing else to do: while a microthread waits for room
// in its output queue, the main thread's SIMD work goes on, and those cycles are FMAC cycles, not
// stalls (they were both: more datapath cycles than the PE had; found by a PE-semantics audit).
void send_beside_simd(PeContext& ctx) {
  RowVars& v = row(ctx);
  ctx.fmovs(fabout(kC, kN), ctx.mem(v.buf, kN), {.async = true});
  for (int k = 0; k < 3; ++k) ctx.fmacs(ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), 0.5f);  // 300 cycles
}
void late_receive(PeContext& ctx) {  // 500 cycles of its own first: the sender's queue fills
  RowVars& v = row(ctx);
  for (int k = 0; k < 5; ++k) ctx.fmacs(ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), ctx.mem(v.acc, kN), 0.5f);
  ctx.fmovs(ctx.mem(v.buf, kN), fabin(kC, kN));
}

TEST(PeDsd, ASendStallIsCountedOnlyWhenTheDatapathHasNothingElseToDo) {
  Row r(late_receive);
  r.sender.local_tasks[0] = send_beside_simd;
  r.receiver.block(kC);
  r.run();
  for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(r.vars(1).buf[i], float(i) + 0.25f) << i;
  const Pe& sender = r.wafer.pe({0, 0});
  const PeCounters& c = sender.counters;
  EXPECT_EQ(c.fmac_cycles, 3u * kN);
  EXPECT_EQ(c.move_cycles, kN);
  EXPECT_GT(c.stall_send_cycles, 0u);  // it did wait for room, after its SIMD work
  // One thing a cycle: the datapath's cycles fit in the PE's active span.
  EXPECT_LE(c.fmac_cycles + c.move_cycles + c.stall_send_cycles + c.setup_cycles, sender.active_end())
      << "fmac " << c.fmac_cycles << " move " << c.move_cycles << " stall " << c.stall_send_cycles << " setup " << c.setup_cycles;
}

// A synchronous memory op that runs at once completes at once: what its options activate or
// unblock happens there, as the same activate() or unblock() written right after it. (Both were
// dropped when the op ran at once, while a synchronous op queued behind a stream did them.) The
// receiver then takes the sender's stream, so both its tasks run when that op is done.
void op_activates(PeContext& ctx) {
  ctx.block(TaskRef::local(2));
  ctx.activate(2);
  ctx.fmovs(ctx.mem(row(ctx).acc, 4), ctx.mem(row(ctx).buf, 4), {.activate = TaskRef::local(1)});
  ctx.fmovs(ctx.mem(row(ctx).acc + 4, 4), ctx.mem(row(ctx).buf, 4), {.unblock = TaskRef::local(2)});
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
}
void calls_activate(PeContext& ctx) {
  ctx.block(TaskRef::local(2));
  ctx.activate(2);
  ctx.fmovs(ctx.mem(row(ctx).acc, 4), ctx.mem(row(ctx).buf, 4));
  ctx.activate(1);
  ctx.fmovs(ctx.mem(row(ctx).acc + 4, 4), ctx.mem(row(ctx).buf, 4));
  ctx.unblock(TaskRef::local(2));
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
}

TEST(PeDsd, ASynchronousMemoryOpActivatesAndUnblocksWhenItCompletes) {
  Row by_op(op_activates), by_call(calls_activate);
  by_op.receiver.block(kC), by_call.receiver.block(kC);
  by_op.run(), by_call.run();
  const RowVars &a = by_op.vars(1), &b = by_call.vars(1);
  EXPECT_GT(a.done_at, 0u);    // the activated task ran ...
  EXPECT_GT(a.finish_at, 0u);  // ... and so did the unblocked one
  EXPECT_EQ(a.done_at, b.done_at);
  EXPECT_EQ(a.finish_at, b.finish_at);
  EXPECT_EQ(by_op.wafer.pe({1, 0}).counters.move_cycles, by_call.wafer.pe({1, 0}).counters.move_cycles);
}

// Behind a stream, in its turn, the same: what a synchronous memory op activates or unblocks
// happens when it runs (both were dropped there: a task it activated never ran, and the PE ended
// in a deadlock waiting for one it unblocked; found by a PE-semantics audit).
void op_activates_behind_a_stream(PeContext& ctx) {
  ctx.block(TaskRef::local(2));
  ctx.activate(2);
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
  ctx.fmovs(ctx.mem(row(ctx).buf, 4), ctx.mem(row(ctx).acc, 4), {.activate = TaskRef::local(1)});
  ctx.fmovs(ctx.mem(row(ctx).buf + 4, 4), ctx.mem(row(ctx).acc, 4), {.unblock = TaskRef::local(2)});
}
void calls_activate_behind_a_stream(PeContext& ctx) {
  ctx.block(TaskRef::local(2));
  ctx.activate(2);
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
  ctx.fmovs(ctx.mem(row(ctx).buf, 4), ctx.mem(row(ctx).acc, 4));
  ctx.activate(1);
  ctx.fmovs(ctx.mem(row(ctx).buf + 4, 4), ctx.mem(row(ctx).acc, 4));
  ctx.unblock(TaskRef::local(2));
}

TEST(PeDsd, ASynchronousMemoryOpBehindAStreamActivatesAndUnblocksInItsTurn) {
  Row by_op(op_activates_behind_a_stream), by_call(calls_activate_behind_a_stream);
  by_op.receiver.block(kC), by_call.receiver.block(kC);
  by_op.run(), by_call.run();
  const RowVars &a = by_op.vars(1), &b = by_call.vars(1);
  // The stream's last element arrives at 51 + kN - 1 (AStreamingOp... above): both tasks run
  // after it and the two copies, as the same activate() and unblock() queued after them.
  EXPECT_GT(a.done_at, 50u + kN);
  EXPECT_GT(a.finish_at, 50u + kN);
  EXPECT_EQ(a.done_at, b.done_at);
  EXPECT_EQ(a.finish_at, b.finish_at);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(a.buf[i], a.acc[i]) << i;  // the copies ran after the stream
}

void count_task(PeContext& ctx, Wavelet w) {
  RowVars& v = row(ctx);
  v.seen[v.tasks_seen++] = w.payload;
}
void first_five_then_tasks(PeContext& ctx) {
  ctx.fmovs(ctx.mem(row(ctx).acc, 5), fabin(kC, 5), {.async = true, .unblock = TaskRef::data(kC)});
}
void send_eight(PeContext& ctx) { ctx.fmovs(fabout(kC, 8), ctx.mem(row(ctx).buf, 8)); }

TEST(PeDsd, ABlockedColourLeavesItsWaveletsToAnOpUntilTheOpUnblocksIt) {
  Row r(first_five_then_tasks);
  r.sender.local_tasks[0] = send_eight;
  r.receiver.on(kC, count_task, "count").block(kC);
  r.run();
  RowVars& v = r.vars(1);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(v.acc[i], float(i) + 0.25f) << i;
  ASSERT_EQ(v.tasks_seen, 3u);  // the rest fired the data task once the op unblocked the colour
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(std::bit_cast<float>(v.seen[i]), float(5 + i) + 0.25f) << i;
}

// The main thread's queue grows as a task queues more (pe/pe.hpp): what a task queues behind a
// streaming op runs in the order issued, across the queue's growth, across its wrap-around (a
// second task's items start where the first task's ended), and up to its limit of 16 items.
// Each queued op is y = c + 2y with its own c, so y's final value spells out the order they ran in.
void chain_op(PeContext& ctx, float c) {
  float* y = &row(ctx).chain;
  ctx.fmacs(ctx.mem(y, 1), scalar_f32(c), ctx.mem(y, 1), 2.0f);
}
float chained(float y, float first, int n) {  // the same chain, by hand
  for (int k = 0; k < n; ++k) y = (first + float(k)) + 2.0f * y;
  return y;
}
constexpr uint32_t kHalf = kN / 2;
void second_half(PeContext& ctx) {  // 1 stream + 5 ops: grows past 4 while wrapped (head 3)
  RowVars& v = row(ctx);
  ctx.fadds(ctx.mem(v.acc + kHalf, kHalf), ctx.mem(v.acc + kHalf, kHalf), fabin(kC, kHalf));
  // The first op adds the stream's last result: it sees it only if it runs after the stream.
  ctx.fmacs(ctx.mem(&v.chain, 1), ctx.mem(v.acc + kN - 1, 1), ctx.mem(&v.chain, 1), 2.0f);
  for (int k = 1; k < 5; ++k) chain_op(ctx, float(10 + k));
  ctx.activate(1);  // records the cycle: queued too, the seventh item
}
void first_half(PeContext& ctx) {  // 1 stream + 1 op + 1 activate: the queue grows from 2 to 4 and ends at 3
  ctx.fadds(ctx.mem(row(ctx).acc, kHalf), ctx.mem(row(ctx).acc, kHalf), fabin(kC, kHalf));
  chain_op(ctx, 1.0f);
  ctx.activate(3);
}
void fifteen_behind_a_stream(PeContext& ctx) {  // 16 items: the limit
  ctx.fadds(ctx.mem(row(ctx).acc, kN), ctx.mem(row(ctx).acc, kN), fabin(kC, kN));
  for (int k = 0; k < 14; ++k) chain_op(ctx, float(1 + k));
  ctx.activate(1);
}

TEST(PeDsd, QueuedOpsRunInIssueOrderAsTheQueueGrowsAndWraps) {
  {
    Row r(first_half);
    r.receiver.local(second_half, "second_half");
    r.receiver.block(kC);
    r.run();
    for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(r.vars(1).acc[i], 1000.0f + (float(i) + 0.25f)) << i;
    const float last = 1000.0f + (float(kN - 1) + 0.25f);  // the stream's last sum
    EXPECT_EQ(r.vars(1).chain, chained(last + 2.0f * chained(0.0f, 1.0f, 1), 11.0f, 4));  // 1, last, then 11 .. 14
    EXPECT_GT(r.vars(1).done_at, 0u);  // the second task's last item ran
  }
  {
    Row r(fifteen_behind_a_stream);
    r.receiver.block(kC);
    r.run();
    EXPECT_EQ(r.vars(1).chain, chained(0.0f, 1.0f, 14));
    EXPECT_EQ(r.vars(1).acc[kN - 1], 1000.0f + (float(kN - 1) + 0.25f));
    // The stream is done at 51 + kN (as above), each queued op takes the main thread a cycle
    // after it, and the activated task runs once the last has.
    EXPECT_EQ(r.vars(1).done_at, 51u + kN + 14);
  }
}

// Microthreads are allocated up to the highest one used: a stream on the lowest free one (0),
// then an op on microthread 5, which grows the slots while the stream is in flight in slot 0.
// Both run at once and both finish with their results.
void two_microthreads(PeContext& ctx) {
  RowVars& v = row(ctx);
  ctx.fmovs(ctx.mem(v.buf, kN), fabin(kC, kN), {.async = true});
  ctx.fmovs(ctx.mem(&v.chain, 1), scalar_f32(7.0f), {.async = true, .microthread = 5, .activate = TaskRef::local(1)});
}

TEST(PeDsd, MicrothreadsNamedOutOfOrderEachKeepTheirOp) {
  Row r(two_microthreads);
  r.receiver.block(kC);
  std::vector<TaskCost> log;
  r.run(&log);
  for (uint32_t i = 0; i < kN; ++i) EXPECT_EQ(r.vars(1).buf[i], float(i) + 0.25f) << i;
  EXPECT_EQ(r.vars(1).chain, 7.0f);
  std::vector<int> threads;
  for (const TaskCost& t : log)
    if (t.op) threads.push_back(t.thread);
  EXPECT_EQ(threads, (std::vector<int>{6, 1}));  // microthread 5's one-element op ends first
  EXPECT_EQ(r.vars(1).done_at, 2u);  // it ran in the cycle after the start task
}

void sixteen_behind_a_stream(PeContext& ctx) {  // 17 items: one too many
  ctx.fmovs(fabout(kC, kN), ctx.mem(row(ctx).buf, kN));
  for (int k = 0; k < 16; ++k) chain_op(ctx, float(1 + k));
}

// ---- bad programs ----

template <LocalTask T>
void expect_program_error(std::initializer_list<std::string> fragments, uint32_t microthreads = 8) {
  SCOPED_TRACE(*(fragments.end() - 1));  // which case, when one fails
  MachineSpec s = test::wse2();
  s.microthreads = microthreads;
  Wafer wafer(s, {2, 1});
  wafer.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  wafer.mesh().set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  Program p;
  p.name = "bad";
  p.start_task = p.local(T, "the_task");
  Program sink;
  sink.name = "sink";
  sink.block(kC);
  wafer.load({0, 0}, &p);
  wafer.load({1, 0}, &sink);
  wafer.allocate({0, 0}, "vars", sizeof(RowVars));
  wafer.finalize(1);
  test::expect_error<PeError>([&] { wafer.run(10'000); }, fragments);
}

void reads_undelivered_colour(PeContext& ctx) { ctx.fmovs(ctx.mem(row(ctx).buf, 4), fabin(7, 4)); }
void sends_unrouted_colour(PeContext& ctx) { ctx.fmovs(fabout(9, 4), ctx.mem(row(ctx).buf, 4)); }
void beyond_sram(PeContext& ctx) { ctx.fmovs(mem1d(49152 - 8, 4), scalar_f32(1.0f)); }
void bad_microthread(PeContext& ctx) {
  ctx.fmovs(fabout(kC, 4), ctx.mem(row(ctx).buf, 4), {.async = true, .microthread = 9});
}
void too_many_async(PeContext& ctx) {
  for (int k = 0; k < 3; ++k) ctx.fmovs(ctx.mem(row(ctx).acc + k, 1), ctx.mem(row(ctx).buf, 1), {.async = true});
}
void lengths_differ(PeContext& ctx) { ctx.fadds(ctx.mem(row(ctx).acc, 4), ctx.mem(row(ctx).buf, 4), ctx.mem(row(ctx).buf, 3)); }
// The SDK's limits: a DSD's extent is a u16; an op activates or unblocks on completion, not both.
void extent_beyond_u16(PeContext& ctx) { ctx.fmovs(fabout(kC, 65536), scalar_f32(1.0f)); }
// A memory op's extent is a u16 too (one that runs at once was not checked): a stride-0
// destination keeps 65536 elements inside SRAM.
void memory_extent_beyond_u16(PeContext& ctx) { ctx.fmovs(mem1d(0, 65536, 0), scalar_f32(1.0f)); }
// mem1d_dsd's stride is an i8: 127 is the widest step either way (-128 too), 128 is refused.
void stride_beyond_i8(PeContext& ctx) {
  ctx.fmovs(mem1d(0, 2, 127), scalar_f32(1.0f));
  ctx.fmovs(mem1d(1024, 2, -128), scalar_f32(1.0f));
  ctx.fmovs(mem1d(0, 2, 128), scalar_f32(1.0f));
}
void activates_and_unblocks(PeContext& ctx) {
  ctx.fmovs(fabout(kC, 4), ctx.mem(row(ctx).buf, 4), {.async = true, .activate = TaskRef::local(0), .unblock = TaskRef::data(kC)});
}

void nothing_task(PeContext&) {}
void nothing_data_task(PeContext&, Wavelet) {}

// Found by a kernel-author audit: an op completing into a local task the program does not bind
// called it through a null pointer (a segfault, sync or async, memory or fabric); block, unblock
// and a data task's activate did nothing at all; a misaligned memory DSD ran on the model's byte
// offsets; PeContext::at beyond the SRAM wrote into the next PE's.
void completes_into_unbound_task(PeContext& ctx) { ctx.fmovs(ctx.mem(row(ctx).buf, 4), scalar_f32(1.0f), {.activate = TaskRef::local(9)}); }
void async_completes_into_unbound_task(PeContext& ctx) {
  ctx.fmovs(fabout(kC, 4), ctx.mem(row(ctx).buf, 4), {.async = true, .activate = TaskRef::local(9)});
}
void unblocks_unbound_task_on_completion(PeContext& ctx) {
  ctx.fmovs(ctx.mem(row(ctx).buf, 4), scalar_f32(1.0f), {.unblock = TaskRef::local(3)});
}
void activates_a_data_task(PeContext& ctx) { ctx.fmovs(ctx.mem(row(ctx).buf, 4), scalar_f32(1.0f), {.activate = TaskRef::data(kC)}); }
void blocks_unbound_task(PeContext& ctx) { ctx.block(TaskRef::local(31)); }
void activates_unbound_task(PeContext& ctx) { ctx.activate(7); }
void unblocks_colour_beyond_the_machine(PeContext& ctx) { ctx.unblock(TaskRef::data(30)); }
void misaligned_fp32(PeContext& ctx) { ctx.fmovs(mem1d(2, 4), scalar_f32(1.0f)); }
void misaligned_fp16(PeContext& ctx) { ctx.fmovh(mem1d(1, 4), mem1d(64, 4)); }
[[maybe_unused]] void at_beyond_sram(PeContext& ctx) { *ctx.at<uint32_t>(49216u) = 12345u; }

// Found by a PE-semantics audit: CSL's scalars are typed, and an fp32 scalar read as fp16 bits
// (fmovh of scalar_f32(1.0f) wrote 0) or the other way round ran silently; an empty Dsd{} source
// read as zeros; a TaskRef{} blocked colour 0; microthread -7 took any free one; a queued async op
// naming a busy microthread was told there was no free microthread.
void fp32_scalar_into_fp16(PeContext& ctx) { ctx.fmovh(mem1d(64, 4), scalar_f32(1.0f)); }
void fp16_scalar_into_fp32(PeContext& ctx) { ctx.fadds(ctx.mem(row(ctx).acc, 4), ctx.mem(row(ctx).buf, 4), scalar_f16(_Float16(3))); }
void empty_source(PeContext& ctx) { ctx.fadds(ctx.mem(row(ctx).acc, 4), ctx.mem(row(ctx).buf, 4), Dsd{}); }
void empty_move(PeContext& ctx) { ctx.fmovs(ctx.mem(row(ctx).acc, 4), Dsd{}); }
void blocks_no_task(PeContext& ctx) { ctx.block(TaskRef{}); }
void negative_microthread(PeContext& ctx) {
  ctx.fmovs(ctx.mem(row(ctx).acc, 1), ctx.mem(row(ctx).buf, 1), {.async = true, .microthread = -7});
}
void queued_busy_microthread(PeContext& ctx) {
  ctx.fmovs(fabout(kC, 2), ctx.mem(row(ctx).buf, 2));
  ctx.fmovs(ctx.mem(row(ctx).acc, 8), ctx.mem(row(ctx).buf, 8), {.async = true, .microthread = 1});
  ctx.fmovs(ctx.mem(row(ctx).acc + 8, 8), ctx.mem(row(ctx).buf, 8), {.async = true, .microthread = 1});
}

TEST(PeDsd, ScalarsAreTypedAndEveryOperandAndTaskIsNamed) {
  expect_program_error<fp32_scalar_into_fp16>({"PE (0,0)", "@fmovh", "source operand a is an fp32 scalar (scalar_f32)", "reads fp16: use scalar_f16"});
  expect_program_error<fp16_scalar_into_fp32>({"PE (0,0)", "@fadds", "source operand b is an fp16 scalar (scalar_f16)", "reads fp32: use scalar_f32"});
  expect_program_error<empty_source>({"PE (0,0)", "@fadds", "source operand b is an empty DSD (Dsd{})"});
  expect_program_error<empty_move>({"PE (0,0)", "@fmovs", "source operand a is an empty DSD (Dsd{})"});
  expect_program_error<blocks_no_task>({"PE (0,0)", "blocks TaskRef{}, which names no task"});
  expect_program_error<negative_microthread>({"PE (0,0)", "@fmovs", "microthread -7 is out of range"});
  expect_program_error<queued_busy_microthread>({"PE (0,0)", "@fmovs", "microthread 1 still runs @fmovs", "one op per microthread at a time"});
}

// An op with both sources on one colour was told "colour 3 is already read by another running op"
// with no other op running (a kernel-author audit).
void reads_one_colour_twice(PeContext& ctx) { ctx.fsubs(ctx.mem(row(ctx).acc, 4), fabin(kC, 4), fabin(kC, 4)); }

// PE (0,0) of `wafer` runs `start` as program `p`'s start task, with RowVars, and the wafer is
// finalized on one worker.
void run_start_task(Wafer& wafer, Program& p, const char* name, void (*start)(PeContext&)) {
  p.name = name;
  p.start_task = p.local(start, "start");
  wafer.load({0, 0}, &p);
  wafer.allocate({0, 0}, "vars", sizeof(RowVars));
  wafer.finalize(1);
}

TEST(PeDsd, AnOpReadingOneColourAsBothSourcesIsToldSo) {
  Wafer wafer(test::wse2(), {2, 1});
  wafer.mesh().add_ingress({0, 0}, Dir::West);
  wafer.mesh().set_route({0, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  Program p;
  run_start_task(wafer, p, "twice", reads_one_colour_twice);
  test::expect_error<PeError>([&] { wafer.run(10'000); },
                              {"PE (0,0) (program 'twice'), 'start', DSD op @fsubs: reads colour 3 as both its sources"});
}

// WSE-3 refuses an op with two fabric sources ("it is illegal for a DSD operation to have
// multiple arguments that are fabric inputs", the SDK's DSDs page); WSE-2 takes it. It ran on
// both (a PE audit, forty-sixth round).
void reads_two_colours(PeContext& ctx) { ctx.fsubs(ctx.mem(row(ctx).acc, 4), fabin(kC, 4), fabin(kC + 1, 4)); }

TEST(PeDsd, AnOpReadingTwoFabricSourcesIsRefusedOnWse3) {
  for (const char* preset : {"wse2", "wse3"}) {
    const MachineSpec spec = load_machine(preset);
    EXPECT_EQ(spec.fabric_inputs_per_op, std::string(preset) == "wse3" ? 1u : 2u) << preset;
    Wafer wafer(spec, {2, 1});
    IngressPort& west = wafer.mesh().add_ingress({0, 0}, Dir::West);
    IngressPort& north = wafer.mesh().add_ingress({0, 0}, Dir::North);
    for (uint32_t k = 0; k < 4; ++k) west.enqueue(Wavelet{k, kC}), north.enqueue(Wavelet{k, Colour(kC + 1)});
    wafer.mesh().set_route({0, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
    wafer.mesh().set_route({0, 0}, kC + 1, Route::make(Dir::North, {Dir::Ramp}));
    Program p;
    run_start_task(wafer, p, "two", reads_two_colours);
    if (std::string(preset) == "wse3") {
      test::expect_error<PeError>([&] { wafer.run(10'000); },
                                  {"PE (0,0) (program 'two'), 'start', DSD op @fsubs: reads two fabric sources (colours 3 and 4), but an op "
                                   "on wse3 may read 1 (machine.fabric_inputs_per_op)"});
    } else {
      const WaferRun run = wafer.run(10'000);
      EXPECT_FALSE(run.engine.hit_cycle_limit);
    }
  }
}

TEST(PeDsd, TaskReferencesAlignmentAndAtAreChecked) {
  expect_program_error<completes_into_unbound_task>({"PE (0,0)", "'the_task'", "@fmovs", "activates local task 9 on completion", "binds 1"});
  expect_program_error<async_completes_into_unbound_task>({"PE (0,0)", "'the_task'", "@fmovs", "activates local task 9 on completion"});
  expect_program_error<unblocks_unbound_task_on_completion>({"PE (0,0)", "@fmovs", "unblocks local task 3 on completion"});
  expect_program_error<activates_a_data_task>({"PE (0,0)", "@fmovs", "activates the data task of colour", "an op activates a local task"});
  expect_program_error<blocks_unbound_task>({"PE (0,0)", "program 'bad'), 'the_task': blocks local task 31, which its program does not have"});
  expect_program_error<activates_unbound_task>({"PE (0,0) (program 'bad'), 'the_task': activates local task 7, which its program does not have"});
  expect_program_error<unblocks_colour_beyond_the_machine>({"PE (0,0)", "unblocks the data task of colour 30, beyond the 24 colours"});
  expect_program_error<misaligned_fp32>({"PE (0,0)", "@fmovs", "byte offset 2 for fp32 elements", "multiples of 4 bytes"});
  expect_program_error<misaligned_fp16>({"PE (0,0)", "@fmovh", "byte offset 1 for fp16 elements", "multiples of 2 bytes"});
#ifdef WSE_CHECK_INVARIANTS  // (checked in the sanitizer builds only: see PeContext::at)
  expect_program_error<at_beyond_sram>({"PE (0,0)", "4 bytes at SRAM offset 49216 (PeContext::at)", "beyond the PE's 49152 bytes"});
#endif
}

// What a program binds is checked when the wafer is finalized: a start task it does not bind
// (called through a null pointer at cycle 0), a data task or a blocked colour beyond the machine's.
TEST(PeDsd, AStartTaskOrColourTheProgramCannotHaveIsRefusedAtFinalize) {
  for (int kase = 0; kase < 3; ++kase) {
    Wafer wafer(test::wse2(), {1, 1});
    Program p;
    p.name = "prog";
    p.local(nothing_task, "t");
    if (kase == 0) p.start_task = 7;
    if (kase == 1) p.on(30, nothing_data_task, "d");
    if (kase == 2) p.block(29);
    wafer.load({0, 0}, &p);
    const std::vector<std::string> want[] = {{"PE (0,0)", "start task is local task 7", "binds 1"},
                                             {"PE (0,0)", "binds a data task to colour 30", "24 colours of a wse2 PE"},
                                             {"PE (0,0)", "blocks colour 29", "24 colours"}};
    test::expect_error<PeError>([&] { wafer.finalize(1); }, std::initializer_list<std::string>{want[kase][0], want[kase][1], want[kase][2]});
  }
}

TEST(PeDsd, BadProgramsGetClearErrorsNamingThePeTaskAndOp) {
  expect_program_error<reads_undelivered_colour>({"PE (0,0)", "'the_task'", "@fmovs", "reads colour 7", "no route with tx RAMP"});
  expect_program_error<sends_unrouted_colour>({"PE (0,0)", "'the_task'", "@fmovs", "sends on colour 9"});
  expect_program_error<beyond_sram>({"PE (0,0)", "'the_task'", "memory DSD", "beyond the PE's 49152 bytes"});
  expect_program_error<bad_microthread>({"PE (0,0)", "'the_task'", "microthread 9 is out of range", "has 8"});
  expect_program_error<too_many_async>({"PE (0,0)", "'the_task'", "more asynchronous ops in flight than the 2 microthreads"}, 2);
  expect_program_error<sixteen_behind_a_stream>({"PE (0,0)", "'the_task'", "more than 16 ops and task actions queued"});
  expect_program_error<lengths_differ>({"PE (0,0)", "@fadds", "operand lengths differ", "4 elements, a source 3"});
  expect_program_error<extent_beyond_u16>({"PE (0,0)", "@fmovs", "65536 elements", "extent is a u16 (at most 65535)"});
  expect_program_error<memory_extent_beyond_u16>({"PE (0,0)", "@fmovs", "65536 elements", "extent is a u16"});
  expect_program_error<stride_beyond_i8>({"PE (0,0)", "@fmovs", "stride of 128 elements", "an i8 (-128 to 127)"});
  expect_program_error<activates_and_unblocks>({"PE (0,0)", "'the_task'", "both activate and unblock", "one of them"});
}

TEST(PeDsd, APeThatReceivesOrSendsOnMoreColoursThanItHasQueuesIsRefused) {
  MachineSpec s = test::wse2();
  Wafer wafer(s, {1, 1});
  Program p;
  p.name = "many";
  wafer.load({0, 0}, &p);
  wafer.mesh().add_ingress({0, 0}, Dir::West);
  for (Colour c = 0; c < 9; ++c) wafer.mesh().set_route({0, 0}, c, Route::make(Dir::West, {Dir::Ramp}));
  test::expect_error<RouteError>([&] { wafer.finalize(1); }, {"PE (0,0) receives 9 colours", "8 input queues"});
}

// A preset's task IDs bound a program's local tasks (machines/*.yaml `local_task_ids`: WSE-2's
// IDs 0-30, WSE-3's 8-30, SDK Task-IDs): one more than the preset has is refused at finalize,
// naming the PE and both counts; as many as it has are taken.
void nothing(PeContext&) {}
TEST(PeDsd, AProgramBindingMoreLocalTasksThanThePresetHasTaskIdsIsRefused) {
  for (const MachineSpec& s : {test::wse2(), test::wse3()}) {
    for (uint32_t n : {s.local_task_ids, s.local_task_ids + 1}) {
      Wafer wafer(s, {1, 1});
      Program p;
      p.name = "tasks";
      for (uint32_t i = 0; i < n; ++i) p.local(nothing, "t");
      wafer.load({0, 0}, &p);
      if (n <= s.local_task_ids) {
        EXPECT_NO_THROW(wafer.finalize(1)) << s.name << " " << n;
      } else {
        test::expect_error<PeError>([&] { wafer.finalize(1); },
                                    {"PE (0,0)", "binds " + std::to_string(n) + " local tasks", std::to_string(s.local_task_ids) + " task IDs"});
      }
    }
  }
  EXPECT_EQ(test::wse2().local_task_ids, 31u);
  EXPECT_EQ(test::wse3().local_task_ids, 23u);
}

// On WSE-2 a data task's ID is its colour, one of the same 0-30 the local tasks take (SDK
// Task-IDs), so local and data tasks together must fit 31; on WSE-3 data tasks take the input
// queues' IDs 0-7 and leave the local tasks all 23 of theirs.
void nothing_on(PeContext&, Wavelet) {}
TEST(PeDsd, OnWse2LocalAndDataTasksShareTheTaskIds) {
  auto finalize = [](const MachineSpec& s, uint32_t locals, uint32_t data) {
    Wafer wafer(s, {1, 1});
    Program p;
    p.name = "tasks";
    for (uint32_t i = 0; i < locals; ++i) p.local(nothing, "t");
    for (Colour c = 0; c < data; ++c) p.on(c, nothing_on, "d");
    wafer.load({0, 0}, &p);
    wafer.finalize(1);
  };
  EXPECT_TRUE(test::wse2().data_task_ids_shared);
  EXPECT_FALSE(test::wse3().data_task_ids_shared);
  EXPECT_NO_THROW(finalize(test::wse2(), 29, 2));
  test::expect_error<PeError>([&] { finalize(test::wse2(), 29, 3); },
                              {"PE (0,0)", "29 local tasks and 3 data tasks", "31 task IDs for both", "its colour"});
  EXPECT_NO_THROW(finalize(test::wse2(), 0, 24));  // a data task on every colour
  EXPECT_NO_THROW(finalize(test::wse3(), 23, 8));
}

// A data task costs the preset's `data_task_receive_cycles` before it runs (its wavelet taken
// from the input queue): the receiver's receive count is that many per wavelet, and a row whose
// receiver fires a data task per wavelet (a task of no other cost) takes a wavelet every
// `receive` cycles (at least 1): three receive cycles instead of one add exactly 2 a wavelet.
void count_only(PeContext& ctx, Wavelet) { ++row(ctx).tasks_seen; }
TEST(PeDsd, ADataTaskCostsThePresetsReceiveCyclesBeforeItRuns) {
  uint64_t cycles[2] = {};
  for (uint32_t k : {1u, 3u}) {
    MachineSpec spec = test::wse2();
    spec.data_task_receive_cycles = k;
    Wafer wafer(spec, {2, 1});
    Mesh& m = wafer.mesh();
    m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
    m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
    Program sender, receiver;
    sender.name = "sender";
    sender.start_task = sender.local(send_all, "send_all");
    receiver.name = "receiver";
    receiver.on(kC, count_only, "count");
    for (uint32_t x = 0; x < 2; ++x) {
      wafer.load({x, 0}, x ? &receiver : &sender);
      wafer.allocate({x, 0}, "vars", sizeof(RowVars));
      std::memset(wafer.pe({x, 0}).sram.base(), 0, sizeof(RowVars));
    }
    wafer.finalize(1);
    cycles[k == 3] = wafer.run(100'000).cycles;
    EXPECT_EQ(reinterpret_cast<const RowVars*>(wafer.pe({1, 0}).sram.base())->tasks_seen, kN) << k;
    EXPECT_EQ(wafer.pe({1, 0}).counters.receive_cycles, uint64_t(kN) * k) << k;
  }
  // Exactly (it was "at least 2 (kN - 1) more": charging 2k a wavelet while counting k passed).
  EXPECT_EQ(cycles[1] - cycles[0], 2 * kN) << cycles[0] << " then " << cycles[1];
}

}  // namespace
}  // namespace wse
