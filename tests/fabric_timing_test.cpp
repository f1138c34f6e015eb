// Timing of wavelets on links and routers, against closed forms.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace wse {
namespace {

// A row of `w` tiles routing colour 0 west -> east, fed by an ingress port on the west edge of
// tile (0,0) and drained by an egress port on the east edge of tile (w-1,0).
struct Row {
  Wafer wafer;
  IngressPort* in;
  EgressPort* out;
  Row(uint32_t w, uint32_t n, uint32_t latency, uint32_t threads = 1) : wafer(test::spec(latency), {w, 1}) {
    for (uint32_t x = 0; x < w; ++x) wafer.mesh().set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
    in = &wafer.mesh().add_ingress({0, 0}, Dir::West);
    out = &wafer.mesh().add_egress({w - 1, 0}, Dir::East);
    for (uint32_t k = 0; k < n; ++k) in->enqueue(Wavelet{k, 0});
    wafer.finalize(threads);
  }
};

TEST(FabricTiming, WaveletCrossingHHopsArrivesAfterHTimesHopLatency) {
  for (uint32_t latency : {1u, 2u, 3u, 5u}) {
    for (uint32_t hops : {1u, 2u, 7u, 20u}) {
      Row row(hops, 1, latency);  // hops-1 router-to-router links plus the egress link
      row.wafer.run(100000);
      ASSERT_EQ(row.out->received().size(), 1u);
      EXPECT_EQ(row.out->received()[0].cycle, uint64_t(hops) * latency) << "latency " << latency << " hops " << hops;
    }
  }
}

TEST(FabricTiming, ColumnHopsTakeTheSameTime) {
  const uint32_t h = 9, latency = 2;
  Wafer wafer(test::spec(latency), {1, h});
  for (uint32_t y = 0; y < h; ++y) wafer.mesh().set_route({0, y}, 5, Route::make(Dir::North, {Dir::South}));
  wafer.mesh().add_ingress({0, 0}, Dir::North).enqueue(Wavelet{42, 5});
  EgressPort& out = wafer.mesh().add_egress({0, h - 1}, Dir::South);
  wafer.finalize(1);
  wafer.run(1000);
  ASSERT_EQ(out.received().size(), 1u);
  EXPECT_EQ(out.received()[0].cycle, h * latency);
  EXPECT_EQ(out.received()[0].wavelet.payload, 42u);
}

// Four streams cross at the centre of a 5x5 mesh, one from each side, each going straight on at
// link rate on a colour of its own, one after the other (each port starts when the stream before
// has left the mesh). So every router on a stream's way, the centre's four lanes and four
// outputs included, takes one link's wavelets at a time and passes each straight through
// (Router::hop_from, which finds the output beside the input it came in on, not through the
// lane). Each egress gets its own stream, in order, one wavelet a cycle, the last at its start
// + (K-1) + 5 hops; at 1, 2 and 3 threads alike.
TEST(FabricTiming, FourStreamsCrossingAtOneRouterEachGoStraightOn) {
  const uint32_t n = 5, c = n / 2, k_wavelets = 150;
  const Cycle apart = 200;  // > K + n: a stream has left before the next starts
  struct Stream {
    Dir from, to;
  };
  const Stream streams[] = {{Dir::West, Dir::East}, {Dir::East, Dir::West}, {Dir::North, Dir::South}, {Dir::South, Dir::North}};
  for (unsigned threads : {1u, 2u, 3u}) {
    Wafer wafer(test::spec(1), {n, n});  // every port at link rate
    Mesh& mesh = wafer.mesh();
    std::vector<EgressPort*> outs;
    for (Colour colour = 0; colour < 4; ++colour) {
      const auto [from, to] = streams[colour];
      const bool row = from == Dir::West || from == Dir::East;
      auto at = [&](uint32_t i) { return row ? Coord{i, c} : Coord{c, i}; };
      for (uint32_t i = 0; i < n; ++i) mesh.set_route(at(i), colour, Route::make(from, {to}));
      const uint32_t first = from == Dir::West || from == Dir::North ? 0 : n - 1;
      IngressPort& in = mesh.add_ingress(at(first), from);
      in.set_start(apart * colour);
      for (uint32_t k = 0; k < k_wavelets; ++k) in.enqueue(Wavelet{1000 * colour + k, colour});
      outs.push_back(&mesh.add_egress(at(n - 1 - first), to));
    }
    wafer.finalize(threads);
    wafer.run(100000);
    for (Colour colour = 0; colour < 4; ++colour) {
      const auto& got = outs[colour]->received();
      ASSERT_EQ(got.size(), k_wavelets) << "colour " << int(colour) << " threads " << threads;
      for (uint32_t k = 0; k < k_wavelets; ++k) {
        EXPECT_EQ(got[k].wavelet.colour, colour);
        EXPECT_EQ(got[k].wavelet.payload, 1000 * colour + k) << "colour " << int(colour) << " threads " << threads;
        EXPECT_EQ(got[k].cycle, apart * colour + k + n) << "colour " << int(colour) << " threads " << threads;
      }
    }
  }
}

TEST(FabricTiming, NWaveletsOverOneLinkTakeNMinusOnePlusLatency) {
  for (uint32_t latency : {1u, 2u, 4u}) {
    for (uint32_t n : {1u, 2u, 10u, 333u}) {
      Row row(1, n, latency);  // ingress -> router -> one link -> egress
      WaferRun run = row.wafer.run(100000);
      const auto& got = row.out->received();
      ASSERT_EQ(got.size(), n);
      for (uint32_t k = 0; k < n; ++k) {
        EXPECT_EQ(got[k].wavelet.payload, k);         // in order
        EXPECT_EQ(got[k].cycle, k + latency);         // one per cycle, never faster
      }
      EXPECT_EQ(got.back().cycle - 0, n - 1 + latency);
      EXPECT_EQ(run.cycles, n + latency);  // last event at cycle n-1+latency
    }
  }
}

// In every direction and across a worker boundary: credits come back by another path in each
// (eastward within a worker they go straight back; westward, northward and between workers
// through the link), and a credit returned a cycle late passed every test while the one stream
// here ran east (found by a mutation test: a westward chain reduce at depth 1 took 1672 cycles
// instead of 1161, with no test failing).
TEST(FabricTiming, FullRateHoldsOverManyHopsWithTheSmallestBuffers) {
  struct Way {
    Dir from, to;
    bool row;  // a 6x1 row, or a 1x6 column
  };
  for (const Way way : {Way{Dir::West, Dir::East, true}, Way{Dir::East, Dir::West, true}, Way{Dir::North, Dir::South, false},
                        Way{Dir::South, Dir::North, false}})
    for (unsigned threads : {1u, 2u}) {
      MachineSpec s = test::spec(3);
      s.router_buffer_depth = 1;  // capacity = 1 + latency still covers the credit loop
      Wafer wafer(s, way.row ? MeshShape{6, 1} : MeshShape{1, 6});
      auto at = [&](uint32_t i) { return way.row ? Coord{i, 0} : Coord{0, i}; };
      for (uint32_t i = 0; i < 6; ++i) wafer.mesh().set_route(at(i), 0, Route::make(way.from, {way.to}));
      // The stream enters at the side it comes from and leaves at the other.
      const bool forward = way.to == Dir::East || way.to == Dir::South;
      IngressPort& in = wafer.mesh().add_ingress(at(forward ? 0 : 5), way.from);
      EgressPort& out = wafer.mesh().add_egress(at(forward ? 5 : 0), way.to);
      for (uint32_t k = 0; k < 100; ++k) in.enqueue(Wavelet{k, 0});
      wafer.finalize(threads);
      wafer.run(100000);
      ASSERT_EQ(out.received().size(), 100u);
      for (uint32_t k = 0; k < 100; ++k)
        EXPECT_EQ(out.received()[k].cycle, k + 6 * 3) << "toward " << int(way.to) << ", " << threads << " worker(s), wavelet " << k;
    }
}

TEST(FabricTiming, IngressBandwidthIsSharedEvenlyByActivePorts) {
  // 8 bytes/cycle = 2 wavelets/cycle shared by 4 ports = 1/2 wavelet per cycle each.
  MachineSpec s = test::spec(1);
  s.io_bytes_per_cycle = 8;
  Wafer wafer(s, {4, 1});
  std::vector<EgressPort*> outs;
  for (uint32_t x = 0; x < 4; ++x) {
    wafer.mesh().set_route({x, 0}, 0, Route::make(Dir::North, {Dir::South}));
    IngressPort& in = wafer.mesh().add_ingress({x, 0}, Dir::North);
    for (uint32_t k = 0; k < 10; ++k) in.enqueue(Wavelet{k, 0});
    outs.push_back(&wafer.mesh().add_egress({x, 0}, Dir::South));
  }
  wafer.finalize(1);
  wafer.run(1000);
  // Egress shares the same 2 wavelets/cycle, so it is no bottleneck here. k-th enters at 2k.
  for (EgressPort* out : outs) {
    ASSERT_EQ(out->received().size(), 10u);
    for (uint32_t k = 0; k < 10; ++k) EXPECT_EQ(out->received()[k].cycle, 2 * k + 1);
  }
}

// A run that stops at its cycle limit leaves wavelets on links and in lanes; the next run, after a
// pause, starts with an empty agenda. Its routers must still be woken for them (Router::left_over),
// and a router that finds several wavelets of one link visible at once must still put one wavelet
// a cycle on its output (the pass-through takes only one that arrives this very cycle).
TEST(FabricTiming, ARunResumedAfterItsCycleLimitDeliversWhatWasInFlightOnePerCycle) {
  const uint32_t w = 5, latency = 3;
  for (uint32_t n : {3u, 40u}) {       // 3: the port is drained before the stop; 40: it is not
    for (Cycle stop : {4u, 7u, 11u}) {
      Row row(w, n, latency);
      WaferRun first = row.wafer.run(stop);
      ASSERT_TRUE(first.engine.hit_cycle_limit);
      const size_t before = row.out->received().size();
      ASSERT_LT(before, n) << "the first run must stop with wavelets in flight";
      const Cycle resume = stop + 2 * latency + 1;  // longer than a link's latency: all in flight arrived
      row.wafer.idle_until(resume);
      // One cycle, with everything in flight visible at once: each link then carries at most one
      // wavelet sent in it.
      ASSERT_TRUE(row.wafer.run(1).engine.hit_cycle_limit);
      for (const Link& l : row.wafer.mesh().links()) {
        if (l.kind != LinkKind::Hop) continue;
        int sent_at_resume = 0;
        for (auto r = l.flits.reader(); l.flits.holds(r); ++r.head) sent_at_resume += r.at().arrival == resume + latency;
        EXPECT_LE(sent_at_resume, 1) << "link from tile " << l.src << ", n " << n << " stop " << stop;
      }
      WaferRun second = row.wafer.run(100000);
      EXPECT_FALSE(second.engine.hit_cycle_limit);
      const auto& got = row.out->received();
      ASSERT_EQ(got.size(), n) << "n " << n << " stop " << stop;
      for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(got[k].wavelet.payload, k) << "n " << n << " stop " << stop;
      for (size_t k = before; k < n; ++k) {
        EXPECT_GE(got[k].cycle, resume);
        if (k > 0) { EXPECT_GT(got[k].cycle, got[k - 1].cycle) << "two wavelets in one cycle on the egress link, n " << n << " stop " << stop; }
      }
      // No slower than the whole row from the start, then one a cycle.
      EXPECT_LE(got.back().cycle, resume + Cycle(w) * latency + n);
    }
  }
}

// The same with two colours sharing the row and a control wavelet every fifth: after the pause
// a router finds wavelets of both colours and both kinds visible at once on its in link, so its
// step takes plain ones on its common path (Router::ingest) and hands the rest of the link, from
// the first control wavelet or lane change on, to its general one (ingest_from), within one step.
// Every wavelet must still go on once, each colour in order, its flags with it, one a cycle on
// each link, at any thread count.
TEST(FabricTiming, PlainAndControlWaveletsOfTwoColoursVisibleTogetherGoOnInOrderAfterAPause) {
  const uint32_t w = 5, latency = 3, n = 60;
  for (unsigned threads : {1u, 2u}) {
    for (Cycle stop : {5u, 9u, 14u}) {
      Wafer wafer(test::spec(latency), {w, 1});
      for (uint32_t x = 0; x < w; ++x)
        for (Colour c : {Colour(0), Colour(1)}) wafer.mesh().set_route({x, 0}, c, Route::make(Dir::West, {Dir::East}));
      IngressPort& in = wafer.mesh().add_ingress({0, 0}, Dir::West);
      EgressPort& out = wafer.mesh().add_egress({w - 1, 0}, Dir::East);
      for (uint32_t k = 0; k < n; ++k) in.enqueue(Wavelet{k, Colour(k % 2), uint8_t(k % 5 == 3 ? kControl : 0)});
      wafer.finalize(threads);
      ASSERT_TRUE(wafer.run(stop).engine.hit_cycle_limit);
      const Cycle resume = stop + 2 * latency + 1;  // all in flight has arrived by then
      wafer.idle_until(resume);
      WaferRun rest = wafer.run(100000);
      EXPECT_FALSE(rest.engine.hit_cycle_limit);
      const auto& got = out.received();
      ASSERT_EQ(got.size(), n) << "threads " << threads << " stop " << stop;
      std::vector<uint32_t> seen[2];
      for (size_t i = 0; i < got.size(); ++i) {
        const Wavelet& v = got[i].wavelet;
        ASSERT_LT(v.payload, n);
        EXPECT_EQ(v.colour, v.payload % 2) << "payload " << v.payload;
        EXPECT_EQ(v.flags, v.payload % 5 == 3 ? kControl : 0) << "payload " << v.payload;
        seen[v.colour].push_back(v.payload);
        if (i > 0) {
          EXPECT_GT(got[i].cycle, got[i - 1].cycle) << "two wavelets in one cycle on the egress link";
        }
      }
      for (uint32_t c : {0u, 1u}) {
        ASSERT_EQ(seen[c].size(), n / 2);
        for (uint32_t j = 0; j < n / 2; ++j) EXPECT_EQ(seen[c][j], 2 * j + c) << "colour " << c << " threads " << threads << " stop " << stop;
      }
      for (const Link& l : wafer.mesh().links()) {
        if (l.kind == LinkKind::Hop) {
          EXPECT_EQ(l.counters.wavelets, n) << "link from tile " << l.src;
        }
      }
    }
  }
}

}  // namespace
}  // namespace wse
