// Router switches, control wavelets and counter filters, as spcl/spada's routing_wse.md records
// them measured on the Cerebras simulator: positions that name one side (WSE-2) or both (WSE-3),
// at most four per colour, a control wavelet that every switch-configured router it passes
// applies and that stops at the first router delivering to its PE, .advance_switch on the last
// data wavelet of an output DSD, and counter-filter windows.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "pe_test_support.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

constexpr Colour kC = 3;

TEST(RouterSwitch, Wse2PositionsNameOneSideAndAColourHoldsAtMostFour) {
  Wafer w2(test::wse2(), {2, 1});
  w2.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  test::expect_error<RouteError>(
      [&] { w2.mesh().set_switch({0, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::both(Dir::West, {Dir::East}))); },
      {"route at tile (0,0) colour 3", "switch position 1 names both an rx and a tx", "wse2"});
  ColourSwitchConfig four;
  for (int k = 0; k < 4; ++k) four.then(SwitchPosition::transmit({k % 2 ? Dir::East : Dir::Ramp}));
  test::expect_error<RouteError>([&] { w2.mesh().set_switch({0, 0}, kC, four); }, {"5 switch positions", "at most 4"});
  // WSE-3 takes a position naming both sides.
  Wafer w3(test::wse3(), {2, 1});
  w3.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  EXPECT_NO_THROW(w3.mesh().set_switch({0, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::both(Dir::West, {Dir::East}))));
}

TEST(RouterSwitch, ARouterHoldsAtMostThreeFilters) {
  Wafer w(test::wse2(), {1, 1});
  w.mesh().add_ingress({0, 0}, Dir::West);
  for (Colour c = 0; c < 4; ++c) w.mesh().set_route({0, 0}, c, Route::make(Dir::West, {Dir::Ramp}));
  for (Colour c = 0; c < 3; ++c) w.mesh().set_filter({0, 0}, c, CounterFilter::window(0, 1, 2));
  test::expect_error<RouteError>([&] { w.mesh().set_filter({0, 0}, 3, CounterFilter::window(0, 1, 2)); },
                                 {"colour 3", "counter filter number 4", "wse2 PE has 3"});
}

// A stream of 12 wavelets multicast along a row of three PEs; each router's filter hands its PE
// one window of four, the way the SDK's shift bundles pick a destination's words.
TEST(RouterSwitch, CounterFiltersHandEachPeItsWindow) {
  Wafer w(test::spec(1), {3, 1});
  Mesh& m = w.mesh();
  IngressPort& in = m.add_ingress({0, 0}, Dir::West);
  for (uint32_t k = 0; k < 12; ++k) in.enqueue(Wavelet{100 + k, kC});
  test::Recorder rec;
  for (uint32_t x = 0; x < 3; ++x) {
    m.set_route({x, 0}, kC, Route::make(Dir::West, x < 2 ? std::initializer_list<Dir>{Dir::Ramp, Dir::East} : std::initializer_list<Dir>{Dir::Ramp}));
    m.set_filter({x, 0}, kC, CounterFilter::window(4 * x, 4, 12));
    rec.install(w, {x, 0}, 12);
  }
  w.finalize(1);
  w.run(10'000);
  for (uint32_t x = 0; x < 3; ++x)
    EXPECT_EQ(test::Recorder::received(w, {x, 0}), (std::vector<uint32_t>{100 + 4 * x, 101 + 4 * x, 102 + 4 * x, 103 + 4 * x}))
        << "PE " << x;
}

// A filter set between runs of a finalized mesh, on lanes that were plain in the run before (as
// FcWafer::keep_window sets its windows before each pass): each PE gets its window of the second
// stream, as with the filters set before the first run, and at one worker as at three. The hop's
// fast path took the in port's note that the lane was plain, made when the port was aimed, and
// handed PE 1 eight wavelets of the second stream past its filter (a review, forty-seventh round).
TEST(RouterSwitch, AFilterSetBetweenRunsFiltersTheNextRun) {
  for (unsigned workers : {1u, 3u}) {
    Wafer w(test::spec(1), {3, 1});
    Mesh& m = w.mesh();
    IngressPort& in = m.add_ingress({0, 0}, Dir::West);
    test::Recorder rec;
    for (uint32_t x = 0; x < 3; ++x) {
      m.set_route({x, 0}, kC, Route::make(Dir::West, x < 2 ? std::initializer_list<Dir>{Dir::Ramp, Dir::East} : std::initializer_list<Dir>{Dir::Ramp}));
      rec.install(w, {x, 0}, 24);
    }
    w.finalize(workers);
    for (uint32_t k = 0; k < 12; ++k) in.enqueue(Wavelet{100 + k, kC});
    w.run(10'000);  // no filter: every PE takes all 12
    for (uint32_t x = 0; x < 3; ++x) ASSERT_EQ(test::Recorder::received(w, {x, 0}).size(), 12u) << "PE " << x;
    for (uint32_t x = 0; x < 3; ++x) m.set_filter({x, 0}, kC, CounterFilter::window(4 * x, 4, 12));
    in.restart(w.clock());
    for (uint32_t k = 0; k < 12; ++k) in.enqueue(Wavelet{200 + k, kC});
    w.run(10'000);
    for (uint32_t x = 0; x < 3; ++x) {
      const std::vector<uint32_t> got = test::Recorder::received(w, {x, 0});
      ASSERT_EQ(got.size(), 16u) << "PE " << x << " at " << workers << " worker(s)";
      EXPECT_EQ(std::vector<uint32_t>(got.begin() + 12, got.end()), (std::vector<uint32_t>{200 + 4 * x, 201 + 4 * x, 202 + 4 * x, 203 + 4 * x}))
          << "PE " << x << " at " << workers << " worker(s)";
    }
  }
}

// A route set on a finalized mesh, or switch positions reaching a port the route did not, change
// what the links were built for: the run refuses, naming the change, until finalize runs again,
// and then carries the new route. (Before, a new colour's lane had no credits or links: its
// wavelets went nowhere, or through a link that did not exist.) A route already there, given
// again, and a filter, change nothing the links were built for and are taken as they were.
TEST(RouterSwitch, ARouteSetAfterFinalizeIsRefusedUntilFinalizeRunsAgain) {
  Wafer w(test::spec(1), {2, 1});
  Mesh& m = w.mesh();
  IngressPort& in = m.add_ingress({0, 0}, Dir::West);
  test::Recorder rec;
  m.set_route({0, 0}, kC, Route::make(Dir::West, {Dir::Ramp, Dir::East}));
  m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  rec.install(w, {0, 0}, 8);
  rec.install(w, {1, 0}, 8);
  w.finalize(1);
  m.set_route({0, 0}, kC, Route::make(Dir::West, {Dir::East}));  // within its tx: nothing changes
  m.set_filter({1, 0}, kC, CounterFilter::window(0, 2, 4));        // a filter: taken between runs
  EXPECT_EQ(m.stale(), "");
  for (uint32_t k = 0; k < 4; ++k) in.enqueue(Wavelet{100 + k, kC});
  w.run(10'000);
  EXPECT_EQ(test::Recorder::received(w, {0, 0}).size(), 4u);
  EXPECT_EQ(test::Recorder::received(w, {1, 0}), (std::vector<uint32_t>{100, 101}));

  m.set_route({0, 0}, kC + 1, Route::make(Dir::West, {Dir::East}));
  test::expect_error<std::logic_error>([&] { w.run(10'000); }, {"route at tile (0,0) colour 4: a new route after finalize", "finalize again"});
  test::expect_error<std::logic_error>([&] { w.set_workers(2); }, {"a new route after finalize"});
  Wafer grown(test::spec(1), {2, 1});
  grown.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  grown.mesh().set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  rec.install(grown, {1, 0}, 8);
  grown.finalize(1);
  grown.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::South}));
  EXPECT_EQ(grown.mesh().stale(), "route at tile (0,0) colour 3: a route's tx set grew");
  Wafer switched(test::wse3(), {2, 1});
  switched.mesh().set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  switched.mesh().set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  rec.install(switched, {1, 0}, 8);
  switched.finalize(1);
  switched.mesh().set_switch({1, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::transmit({Dir::Ramp})));
  EXPECT_EQ(switched.mesh().stale(), "") << "a switch within the route's ports";
  switched.mesh().set_switch({1, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::transmit({Dir::East})));
  EXPECT_EQ(switched.mesh().stale(), "route at tile (1,0) colour 3: switch positions that reach a port the route did not");

  // Finalized again, the new colour has its links: a second stream on it reaches PE 1.
  m.set_route({1, 0}, kC + 1, Route::make(Dir::West, {Dir::Ramp}));
  w.finalize(1);
  EXPECT_EQ(m.stale(), "");
  in.restart(w.clock());
  for (uint32_t k = 0; k < 4; ++k) in.enqueue(Wavelet{200 + k, Colour(kC + 1)});
  w.run(10'000);
  EXPECT_EQ(test::Recorder::received(w, {1, 0}), (std::vector<uint32_t>{100, 101, 200, 201, 202, 203}));
}

// A window of none, of every wavelet or wider than its period wrapped into a filter passing every
// wavelet (words - 1 below zero, or above limit1) and was accepted; a period of 0 divided by zero;
// a first position past the period was taken modulo it. Each is refused, as is any filter whose
// max_counter reaches limit1 (it passes everything).
TEST(RouterSwitch, AWindowThatCannotBeAFilterIsRefused) {
  test::expect_error<RouteError>([] { CounterFilter::window(0, 0, 64); }, {"window(first 0, words 0, period 64)", "no wavelets"});
  test::expect_error<RouteError>([] { CounterFilter::window(0, 64, 64); }, {"every wavelet: leave the filter out"});
  test::expect_error<RouteError>([] { CounterFilter::window(0, 8, 4); }, {"more wavelets than the period"});
  test::expect_error<RouteError>([] { CounterFilter::window(3, 4, 0); }, {"period must be at least 1"});
  test::expect_error<RouteError>([] { CounterFilter::window(100, 16, 64); }, {"first must lie inside the period (0 to 63)"});
  const CounterFilter wrap = CounterFilter::window(60, 8, 64);  // positions 60-63 and 0-3
  EXPECT_EQ(wrap.init_counter, 4u);
  EXPECT_EQ(wrap.limit1, 63u);
  EXPECT_EQ(wrap.max_counter, 7u);
  Wafer w(test::wse2(), {1, 1});
  w.mesh().add_ingress({0, 0}, Dir::West);
  w.mesh().set_route({0, 0}, 0, Route::make(Dir::West, {Dir::Ramp}));
  test::expect_error<RouteError>([&] { w.mesh().set_filter({0, 0}, 0, CounterFilter{0, 3, 3}); },
                                 {"colour 0", "passes every wavelet (max_counter 3 >= limit1 3)"});
  test::expect_error<RouteError>([&] { w.mesh().set_filter({0, 0}, 0, CounterFilter{}); }, {"passes every wavelet"});
}

// PE (0,0) sends 3 values east, a control wavelet, then 3 more. (1,0) relays east at first; its
// switch's next position delivers to its PE. The control wavelet passes (1,0), which applies it
// once it has forwarded it, and stops at (2,0), whose route delivers to its PE: (2,0) gets the
// first three, (1,0) the last three.
void data_control_data(PeContext& ctx) {
  float* v = ctx.at<float>(64u);
  ctx.fmovs(fabout(kC, 3), ctx.mem(v, 3));
  ctx.send_control(kC, control_payload(SwitchCommand::Advance));
  ctx.fmovs(fabout(kC, 3), ctx.mem(v + 3, 3));
}

TEST(RouterSwitch, AControlWaveletAdvancesTheSwitchesItPassesAndStopsAtTheRamp) {
  Wafer w(test::wse2(), {3, 1});
  Mesh& m = w.mesh();
  m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::East}));
  m.set_switch({1, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::transmit({Dir::Ramp})));
  m.set_route({2, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  Program p;
  p.name = "sender";
  p.start_task = p.local(data_control_data);
  w.load({0, 0}, &p);
  w.allocate({0, 0}, "v", 64 + 24);
  for (int i = 0; i < 6; ++i) reinterpret_cast<float*>(w.pe({0, 0}).sram.base() + 64)[i] = float(i);
  test::Recorder rec;
  rec.install(w, {1, 0}, 8);
  rec.install(w, {2, 0}, 8);
  w.finalize(1);
  w.run(10'000);
  auto floats = [](std::vector<uint32_t> v) {
    std::vector<float> f;
    for (uint32_t x : v) f.push_back(std::bit_cast<float>(x));
    return f;
  };
  EXPECT_EQ(floats(test::Recorder::received(w, {2, 0})), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(floats(test::Recorder::received(w, {1, 0})), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(w.mesh().router(1)->lane_ext(kC)->advances, 1u);
  EXPECT_EQ(w.pe({2, 0}).counters.wavelets_in, 4u);  // three data and the control, which the CE drops
  EXPECT_EQ(w.pe({2, 0}).counters.tasks, 3u);
}

// .advance_switch: the last wavelet of the first send turns the sender's own router from east to
// south, so the second send goes south. Nobody else sees a switch command.
void east_then_south(PeContext& ctx) {
  float* v = ctx.at<float>(64u);
  ctx.fmovs(fabout(kC, 2, {.advance_switch = true}), ctx.mem(v, 2));
  ctx.fmovs(fabout(kC, 2), ctx.mem(v + 2, 2));
}

TEST(RouterSwitch, AdvanceSwitchOnTheLastWaveletTurnsOnlyTheSendersRouter) {
  Wafer w(test::wse2(), {2, 2});
  Mesh& m = w.mesh();
  m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  m.set_switch({0, 0}, kC, ColourSwitchConfig{}.then(SwitchPosition::transmit({Dir::South})));
  m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
  m.set_route({0, 1}, kC, Route::make(Dir::North, {Dir::Ramp}));
  Program p;
  p.name = "sender";
  p.start_task = p.local(east_then_south);
  w.load({0, 0}, &p);
  w.allocate({0, 0}, "v", 64 + 16);
  for (int i = 0; i < 4; ++i) reinterpret_cast<float*>(w.pe({0, 0}).sram.base() + 64)[i] = float(10 + i);
  test::Recorder rec;
  rec.install(w, {1, 0}, 4);
  rec.install(w, {0, 1}, 4);
  w.finalize(1);
  w.run(10'000);
  auto east = test::Recorder::received(w, {1, 0}), south = test::Recorder::received(w, {0, 1});
  ASSERT_EQ(east.size(), 2u);
  ASSERT_EQ(south.size(), 2u);
  EXPECT_EQ(std::bit_cast<float>(east[1]), 11.0f);
  EXPECT_EQ(std::bit_cast<float>(south[0]), 12.0f);
}

// A ring-mode switch wraps from its last position to the base route; outside ring mode an advance
// past the last position is a no-op.
// Found by a source review of the engine: every Wafer::run reset the switches, so a run that went
// on from one stopped by its cycle limit lost the wavelets a switch held (and their senders'
// credits: a deadlock later), or turned a switch back to its base route. A 2x2 mesh: (1,1) takes
// colour 0 from the west until a control wavelet advances it to the north; run in one piece and in
// two, stopped at several cycles, the egress sees the same wavelets at the same cycles.
TEST(RouterSwitch, ARunStoppedAtItsLimitGoesOnWithItsSwitches) {
  struct Setup {
    static MachineSpec spec() {
      MachineSpec s;
      s.io_bytes_per_cycle = 0, s.hop_latency_cycles = 1;
      return s;
    }
    Wafer wafer{spec(), {2, 2}};
    EgressPort* out = nullptr;
    explicit Setup(unsigned threads) {
      Mesh& m = wafer.mesh();
      m.set_route({0, 1}, 0, Route::make(Dir::West, {Dir::East}));
      m.set_route({1, 0}, 0, Route::make(Dir::North, {Dir::South}));
      m.set_route({1, 1}, 0, Route::make(Dir::West, {Dir::East}));
      m.set_switch({1, 1}, 0, ColourSwitchConfig{}.then(SwitchPosition::receive(Dir::North)));
      IngressPort& west = m.add_ingress({0, 1}, Dir::West);
      IngressPort& north = m.add_ingress({1, 0}, Dir::North);
      out = &m.add_egress({1, 1}, Dir::East);
      for (uint32_t k = 0; k < 12; ++k) west.enqueue(Wavelet{k, 0, 0});
      west.enqueue(Wavelet{control_payload(SwitchCommand::Advance), 0, kControl});
      for (uint32_t k = 0; k < 12; ++k) north.enqueue(Wavelet{100 + k, 0, 0});
      wafer.finalize(threads);
    }
    std::vector<std::pair<uint32_t, Cycle>> arrivals() const {
      std::vector<std::pair<uint32_t, Cycle>> a;
      for (const auto& r : out->received()) a.emplace_back(r.wavelet.payload, r.cycle);
      return a;
    }
  };
  Setup whole(1);
  whole.wafer.run(100000);
  const auto expected = whole.arrivals();
  ASSERT_EQ(expected.size(), 25u);  // 12 from the west, the control wavelet, 12 from the north
  for (unsigned threads : {1u, 2u})
    for (Cycle stop : {3u, 6u, 10u, 17u}) {
      Setup pieces(threads);
      EXPECT_TRUE(pieces.wafer.run(stop).engine.hit_cycle_limit) << stop;
      pieces.wafer.run(100000);
      EXPECT_EQ(pieces.arrivals(), expected) << "stopped at " << stop << ", " << threads << " thread(s)";
    }
}

TEST(RouterSwitch, RingModeWrapsAndTheLastPositionStays) {
  for (bool ring : {false, true}) {
    Wafer w(test::wse2(), {2, 2});
    Mesh& m = w.mesh();
    m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
    ColourSwitchConfig cfg;
    cfg.then(SwitchPosition::transmit({Dir::South}));
    cfg.ring_mode = ring;
    m.set_switch({0, 0}, kC, cfg);
    m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::Ramp}));
    m.set_route({0, 1}, kC, Route::make(Dir::North, {Dir::Ramp}));
    Program p;
    p.name = "sender";
    // Three single-wavelet sends, each advancing: east, south, then east (ring) or south.
    p.start_task = p.local([](PeContext& ctx) {
      for (int k = 0; k < 3; ++k) ctx.fmovs(fabout(kC, 1, {.advance_switch = true}), scalar_f32(float(k)));
    });
    w.load({0, 0}, &p);
    test::Recorder rec;
    rec.install(w, {1, 0}, 4);
    rec.install(w, {0, 1}, 4);
    w.finalize(1);
    w.run(10'000);
    // Which wavelet went where: 0 east, 1 south, then 2 east again (ring) or south (no ring).
    auto values = [&](Coord at) {
      std::vector<float> v;
      for (uint32_t word : test::Recorder::received(w, at)) v.push_back(std::bit_cast<float>(word));
      return v;
    };
    const std::vector<float> east = values({1, 0}), south = values({0, 1});
    if (ring) {
      EXPECT_EQ(east, (std::vector<float>{0, 2}));
      EXPECT_EQ(south, (std::vector<float>{1}));
    } else {
      EXPECT_EQ(east, (std::vector<float>{0}));
      EXPECT_EQ(south, (std::vector<float>{1, 2}));
    }
  }
}

}  // namespace
}  // namespace wse
