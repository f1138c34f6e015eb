// Sharing, isolation and multicast on the fabric, and backpressure from a PE that does not drain.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_support.hpp"

namespace wse {
namespace {

// A PE program that records every wavelet it receives: vars at offset 0 = {count, sum}, then the
// payloads in arrival order.
struct Recorder {
  static void on_wavelet(PeContext& ctx, Wavelet w) {
    auto* count = ctx.at<uint32_t>(0u);
    ctx.at<uint32_t>(8u)[*count] = w.payload;
    ++*count;
  }
  Program program;
  Recorder() {
    program.name = "recorder";
    for (Colour c = 0; c < 24; ++c) program.on(c, on_wavelet);
  }
  static void install(Wafer& w, Coord c, const Program* p, uint32_t max_wavelets) {
    w.load(c, p);
    SramRef r = w.allocate(c, "record", 8 + 4 * max_wavelets);
    EXPECT_EQ(r.offset, 0u);
  }
  static std::vector<uint32_t> received(const Wafer& w, Coord c) {
    const uint8_t* base = w.pe(c).sram.base();
    uint32_t n = *reinterpret_cast<const uint32_t*>(base);
    auto* p = reinterpret_cast<const uint32_t*>(base + 8);
    return {p, p + n};
  }
};

// Two colours merging onto the link (0,0) -> (1,0) of a 2x1 mesh: colour 0 enters (0,0) from the
// west edge (port a), colour 1 from the north edge (port b); at (1,0) colour 1 leaves by the east
// edge port and colour 0 toward `colour0_exit` (East: the same port).
struct TwoColourMerge {
  IngressPort& a;
  IngressPort& b;
  EgressPort& out;
};
TwoColourMerge two_colour_merge(Mesh& m, Dir colour0_exit) {
  m.set_route({0, 0}, 0, Route::make(Dir::West, {Dir::East}));
  m.set_route({0, 0}, 1, Route::make(Dir::North, {Dir::East}));
  m.set_route({1, 0}, 0, Route::make(Dir::West, {colour0_exit}));
  m.set_route({1, 0}, 1, Route::make(Dir::West, {Dir::East}));
  IngressPort& a = m.add_ingress({0, 0}, Dir::West);
  IngressPort& b = m.add_ingress({0, 0}, Dir::North);
  return {a, b, m.add_egress({1, 0}, Dir::East)};
}

TEST(FabricFlow, TwoColoursSharingALinkSerialize) {
  const uint32_t n = 50, latency = 2;
  Wafer wafer(test::spec(latency), {2, 1});
  auto [a, b, out] = two_colour_merge(wafer.mesh(), Dir::East);
  for (uint32_t k = 0; k < n; ++k) a.enqueue(Wavelet{k, 0}), b.enqueue(Wavelet{1000 + k, 1});
  wafer.finalize(1);
  wafer.run(10000);

  const auto& got = out.received();
  ASSERT_EQ(got.size(), 2 * n);
  for (size_t k = 1; k < got.size(); ++k) EXPECT_EQ(got[k].cycle, got[k - 1].cycle + 1);  // one per cycle
  EXPECT_EQ(got.front().cycle, 2 * latency);
  EXPECT_EQ(got.back().cycle, 2 * n - 1 + 2 * latency);  // 2n wavelets through one link: 2n-1 + latency
  // Each colour stays in order.
  uint32_t next0 = 0, next1 = 1000;
  for (const auto& g : got) {
    if (g.wavelet.colour == 0) EXPECT_EQ(g.wavelet.payload, next0++);
    else EXPECT_EQ(g.wavelet.payload, next1++);
  }
  const Link* shared = wafer.mesh().router(0)->out_link(Dir::East);
  EXPECT_EQ(shared->counters.wavelets, 2 * n);
}

// Round-robin per output: when two lanes want one output in the same cycle, the one not granted
// last goes first, also when the last grants were made to lanes that sent alone (a unicast hop's
// fast path in Router::forward must remember them as the general path does). Colour 0 enters at
// cycles 0 and 3, colour 1 at cycles 1 and 3: a0 and b0 each leave alone, b0 last, so at cycle 3
// colour 0 goes first. (Forgetting b0's grant would send b1 first.)
// Two wavelets on each colour of a two-colour merge, entering as the ports' rates and starts say;
// what the egress receives, in order.
std::vector<EgressArrival> merged(PortRate a_rate, Cycle a_start, PortRate b_rate, Cycle b_start) {
  Wafer wafer(test::spec(1), {2, 1});
  auto [a, b, out] = two_colour_merge(wafer.mesh(), Dir::East);
  a.enqueue(Wavelet{100, 0}), a.enqueue(Wavelet{101, 0});
  b.enqueue(Wavelet{200, 1}), b.enqueue(Wavelet{201, 1});
  wafer.finalize(1);
  a.set_rate(a_rate), a.set_start(a_start);
  b.set_rate(b_rate), b.set_start(b_start);
  wafer.run(1000);
  return out.received();
}

std::vector<uint32_t> payloads(const std::vector<EgressArrival>& got) {
  std::vector<uint32_t> order;
  for (const auto& g : got) order.push_back(g.wavelet.payload);
  return order;
}

TEST(FabricFlow, RoundRobinRemembersGrantsToLanesThatSentAlone) {
  const std::vector<EgressArrival> got = merged(PortRate{1, 3}, 0, PortRate{1, 2}, 1);  // a: cycles 0, 3; b: 1, 3
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(payloads(got), (std::vector<uint32_t>{100, 200, 101, 201}));
  // Each leaves (0,0) the cycle it enters, except b1, which waits one cycle for a1: two hops.
  std::vector<Cycle> cycles;
  for (const auto& g : got) cycles.push_back(g.cycle);
  EXPECT_EQ(cycles, (std::vector<Cycle>{2, 3, 5, 6}));

  // The other way round: lane a (colour 0) granted last, then both contend at cycle 2. Round-robin
  // grants b; a fixed priority would grant a again (found by a mutation test: only the case above,
  // where both rules grant the same lane, and a congestion test told them apart).
  EXPECT_EQ(payloads(merged(PortRate{1, 2}, 0, PortRate{}, 2)), (std::vector<uint32_t>{100, 200, 101, 201}));  // a: 0, 2; b: 2, 3
}

// Starts with a long computation, then records what it received.
void busy_start(PeContext& ctx) {
  float* y = ctx.at<float>(0u);
  for (int i = 0; i < 5000; ++i) ctx.fmac(y, y, 0.0f, 1);  // 5000 cycles of fmac
}

// A PE busy for 5000 cycles at start, then recording what arrives on `colour`.
Program slow_recorder(Colour colour) {
  Program p;
  p.name = "slow";
  p.on(colour, Recorder::on_wavelet);
  p.start_task = p.local(busy_start);
  return p;
}

TEST(FabricFlow, AFullBufferOnOneColourDoesNotBlockAnother) {
  // Colour 0 goes to a PE that is busy for 5000 cycles; colour 1 shares the same link and passes.
  const uint32_t n = 40;
  Wafer wafer(test::spec(2), {2, 1});
  auto [blocked, free, out] = two_colour_merge(wafer.mesh(), Dir::Ramp);
  for (uint32_t k = 0; k < n; ++k) blocked.enqueue(Wavelet{k, 0}), free.enqueue(Wavelet{k, 1});
  const Program slow = slow_recorder(0);
  wafer.load({1, 0}, &slow);
  wafer.allocate({1, 0}, "record", 8 + 4 * n);
  wafer.finalize(1);
  WaferRun run = wafer.run(100000);

  ASSERT_EQ(out.received().size(), n);
  // Colour 1 is delayed only by sharing the link with colour 0 while colour 0 still had credits:
  // at most 2n cycles for 2n wavelets, far before the PE frees colour 0 at cycle 5000.
  EXPECT_LT(out.received().back().cycle, 2 * n + 10);
  // Colour 0 waited on backpressure but lost nothing.
  auto rec = Recorder::received(wafer, {1, 0});
  ASSERT_EQ(rec.size(), n);
  for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(rec[k], k);
  EXPECT_GT(wafer.mesh().router(0)->lane(0)->counters.backpressure_cycles, 4000u);
  EXPECT_EQ(wafer.mesh().router(0)->lane(1)->counters.backpressure_cycles, 0u);
  EXPECT_GT(run.cycles, 5000u);
}

TEST(FabricFlow, MulticastDeliversExactlyOnceToEveryTarget) {
  // (1,0) receives from its north edge and multicasts to its PE, west, east and south; (1,1)
  // to its PE and south; (1,2) to its PE and off the south edge.
  const uint32_t n = 25;
  Wafer wafer(test::spec(2), {3, 3});
  Mesh& m = wafer.mesh();
  m.set_route({1, 0}, 7, Route::make(Dir::North, {Dir::Ramp, Dir::West, Dir::East, Dir::South}));
  m.set_route({0, 0}, 7, Route::make(Dir::East, {Dir::Ramp}));
  m.set_route({2, 0}, 7, Route::make(Dir::West, {Dir::Ramp}));
  m.set_route({1, 1}, 7, Route::make(Dir::North, {Dir::Ramp, Dir::South}));
  m.set_route({1, 2}, 7, Route::make(Dir::North, {Dir::Ramp, Dir::South}));
  IngressPort& in = m.add_ingress({1, 0}, Dir::North);
  for (uint32_t k = 0; k < n; ++k) in.enqueue(Wavelet{100 + k, 7});
  EgressPort& out = m.add_egress({1, 2}, Dir::South);
  Recorder rec;
  const std::vector<Coord> targets = {{1, 0}, {0, 0}, {2, 0}, {1, 1}, {1, 2}};
  for (Coord c : targets) Recorder::install(wafer, c, &rec.program, n + 1);
  wafer.finalize(1);
  wafer.run(100000);

  for (Coord c : targets) {
    auto got = Recorder::received(wafer, c);
    ASSERT_EQ(got.size(), n) << to_string(c);
    for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(got[k], 100 + k) << to_string(c);
  }
  ASSERT_EQ(out.received().size(), n);
  for (Coord c : {Coord{0, 1}, Coord{2, 1}, Coord{0, 2}, Coord{2, 2}}) EXPECT_EQ(wafer.pe(c).counters.wavelets_in, 0u);
  uint64_t pe_in = 0;
  for (const Pe& pe : wafer.pes()) pe_in += pe.counters.wavelets_in;
  EXPECT_EQ(pe_in, 5 * n);
}

// Sends its 100-word "out" buffer east once, at start.
void send_all(PeContext& ctx) { ctx.send(3, ctx.at<float>(0u), 100); }

// A PE that sends its 100-word "out" buffer on colour 3 at start.
Program sender_program() {
  Program p;
  p.name = "sender";
  p.start_task = p.local(send_all);
  return p;
}

TEST(FabricFlow, APeThatDoesNotDrainStallsItsSenderWithoutLosingAWavelet) {
  const uint32_t n = 100;
  MachineSpec s = test::spec(2);
  Wafer wafer(s, {2, 1});
  Mesh& m = wafer.mesh();
  m.set_route({0, 0}, 3, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, 3, Route::make(Dir::West, {Dir::Ramp}));
  const Program sender = sender_program();
  wafer.load({0, 0}, &sender);
  SramRef buf = wafer.allocate({0, 0}, "out", 4 * n);
  for (uint32_t k = 0; k < n; ++k) reinterpret_cast<uint32_t*>(wafer.pe({0, 0}).sram.base() + buf.offset)[k] = k;
  const Program slow = slow_recorder(3);
  wafer.load({1, 0}, &slow);
  wafer.allocate({1, 0}, "record", 8 + 4 * n);
  wafer.finalize(1);
  WaferRun run = wafer.run(100000);

  auto got = Recorder::received(wafer, {1, 0});
  ASSERT_EQ(got.size(), n);
  for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(got[k], k);
  // Wavelets the path can hold before the sender stalls: the sender's output queue (depth +
  // pipeline), the sender's lane, the hop's lane and the PE input queue, each depth + incoming
  // latency. The send starts after its fabric DSD setup.
  const uint64_t held = (s.pe_output_queue_depth + s.dsd_pipeline_cycles) + (s.router_buffer_depth + s.ramp_latency_cycles) +
                        (s.router_buffer_depth + s.hop_latency_cycles) + (s.pe_input_queue_depth + s.ramp_latency_cycles) +
                        s.fabric_dsd_setup_cycles;
  const PeCounters& snd = wafer.pe({0, 0}).counters;
  EXPECT_EQ(snd.wavelets_out, n);
  EXPECT_EQ(snd.send_cycles, n);
  EXPECT_GT(snd.stall_send_cycles, 5000 - held - 20);
  EXPECT_LT(snd.stall_send_cycles, 5000u);
  const Link* hop = wafer.mesh().router(0)->out_link(Dir::East);
  EXPECT_GT(hop->counters.backpressure_cycles, 4000u);
  EXPECT_EQ(hop->counters.wavelets, n);
  EXPECT_GT(run.cycles, 5000 + n);
  // The sender's own link into its router (PE -> router) backs up too: its output queue's head
  // waits for a credit from when the router's lane is full until the drain's first credit comes
  // back. That is the hop's wait shifted by the fill and by the credit's way back, a cycle apart
  // at most (4943 against 4944 when written). It was counted nowhere before: a PE that waits to
  // send showed no backpressure on its link.
  const Link* ramp = wafer.mesh().router(0)->in_link(Dir::Ramp);
  EXPECT_EQ(ramp->counters.wavelets, n);
  EXPECT_GE(ramp->counters.backpressure_cycles + 1, hop->counters.backpressure_cycles);
  EXPECT_LE(ramp->counters.backpressure_cycles, hop->counters.backpressure_cycles);
}

// Copies 4000 words from one SRAM buffer to another on a microthread: the PE has work of its own
// every cycle for a few thousand cycles, so its tile is stepped every cycle, and none of it
// touches the fabric.
constexpr uint32_t kSpinWords = 4000;
void spin(PeContext& ctx) {
  float* a = ctx.at<float>(0u);
  ctx.fmovs(ctx.mem(a + kSpinWords, kSpinWords), ctx.mem(a, kSpinWords), {.async = true});
}

// The backpressure a blocked router counts is the same whether its tile sleeps (nothing else to
// do: catch_up() counts the cycles it slept) or is stepped every cycle for its PE (then
// Router::may_forward leaves the blocked router asleep and the cycle to catch_up() as well). The
// two runs differ only in that; every link and lane counter must agree, and the flow must too.
TEST(FabricFlow, ABlockedRouterCountsTheSameBackpressureWhetherItsPeIsBusyOrIdle) {
  struct Result {
    std::vector<uint64_t> links, lanes;
    Cycle cycles = 0;
    std::vector<uint32_t> got;
    uint64_t spin_cycles = 0;
  };
  const uint32_t n = 60;
  const Program slow = slow_recorder(0);
  Program spinner;
  spinner.name = "spinner";
  spinner.start_task = spinner.local(spin);
  auto run = [&](bool busy_middle) {
    Wafer wafer(test::spec(1), {3, 1});
    Mesh& m = wafer.mesh();
    m.set_route({0, 0}, 0, Route::make(Dir::West, {Dir::East}));
    m.set_route({1, 0}, 0, Route::make(Dir::West, {Dir::East}));
    m.set_route({2, 0}, 0, Route::make(Dir::West, {Dir::Ramp}));
    IngressPort& in = m.add_ingress({0, 0}, Dir::West);
    for (uint32_t k = 0; k < n; ++k) in.enqueue(Wavelet{k, 0});
    wafer.load({2, 0}, &slow);  // busy for 5000 cycles before it takes a wavelet
    wafer.allocate({2, 0}, "record", 8 + 4 * n);
    if (busy_middle) {
      wafer.load({1, 0}, &spinner);
      wafer.allocate({1, 0}, "words", 2 * 4 * kSpinWords);
    }
    wafer.finalize(1);
    Result r;
    r.cycles = wafer.run(100000).cycles;
    for (const Link& l : m.links()) r.links.push_back(l.counters.backpressure_cycles), r.links.push_back(l.counters.wavelets);
    for (TileId t = 0; t < 3; ++t) r.lanes.push_back(m.router(t)->lane(0)->counters.backpressure_cycles);
    r.got = Recorder::received(wafer, {2, 0});
    r.spin_cycles = wafer.pe({1, 0}).counters.busy_cycles();
    return r;
  };
  const Result idle = run(false), busy = run(true);
  // The middle PE was busy through most of the block (which lasts until the recorder starts, at
  // about cycle 5000), and the middle router was blocked through it.
  EXPECT_GT(busy.spin_cycles, 1500u);
  EXPECT_LT(busy.spin_cycles, 5000u);
  EXPECT_GT(busy.lanes[1], 4000u);
  ASSERT_EQ(idle.got.size(), n);
  for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(idle.got[k], k);
  EXPECT_EQ(busy.got, idle.got);
  EXPECT_EQ(busy.cycles, idle.cycles);
  EXPECT_EQ(busy.lanes, idle.lanes);
  EXPECT_EQ(busy.links, idle.links);
}

// A lane that is the only one sending on its link waits exactly when the link does: each cycle
// its head finds no credit (or no egress slot) is one backpressure cycle on both, whether the
// router is stepped then or asleep (catch_up() counts the lane from blocked_lanes_ and the link
// from blocked_links_, which the unicast fast path sets apart). A row drained by an egress port at
// a quarter of link rate backs up into every router.
TEST(FabricFlow, ALoneLaneAndItsLinkCountTheSameBackpressure) {
  const uint32_t n = 40;
  Wafer wafer(test::spec(1), {3, 1});
  Mesh& m = wafer.mesh();
  for (uint32_t x = 0; x < 3; ++x) m.set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
  IngressPort& in = m.add_ingress({0, 0}, Dir::West);
  for (uint32_t k = 0; k < n; ++k) in.enqueue(Wavelet{k, 0});
  EgressPort& out = m.add_egress({2, 0}, Dir::East);
  wafer.finalize(1);
  out.set_rate(PortRate{1, 4});
  wafer.run(100000);

  ASSERT_EQ(out.received().size(), n);
  for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(out.received()[k].wavelet.payload, k);
  for (TileId t = 0; t < 3; ++t) {
    const Router* r = m.router(t);
    const uint64_t lane = r->lane(0)->counters.backpressure_cycles, link = r->out_link(Dir::East)->counters.backpressure_cycles;
    EXPECT_EQ(lane, link) << "router " << t;
    EXPECT_GT(lane, uint64_t(n)) << "router " << t;  // every router backs up for most of the run
  }
}

TEST(FabricFlow, ACycleLimitStopsARunThatNeverDrains) {
  Wafer wafer(test::spec(2), {2, 1});
  Mesh& m = wafer.mesh();
  m.set_route({0, 0}, 3, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, 3, Route::make(Dir::West, {Dir::Ramp}));
  const Program sender = sender_program();
  wafer.load({0, 0}, &sender);
  wafer.allocate({0, 0}, "out", 400);
  const Program slow = slow_recorder(3);
  wafer.load({1, 0}, &slow);
  wafer.allocate({1, 0}, "record", 408);
  wafer.finalize(1);
  WaferRun run = wafer.run(1000);
  EXPECT_TRUE(run.engine.hit_cycle_limit);
  EXPECT_EQ(run.cycles, 1000u);
  EXPECT_EQ(Recorder::received(wafer, {1, 0}).size(), 0u);
  EXPECT_GT(wafer.pe({0, 0}).counters.stall_send_cycles, 900u);
}

}  // namespace
}  // namespace wse
