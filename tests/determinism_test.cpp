// The same config gives bit-identical results and counters at any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>

#include "host/config.hpp"
#include "kernels/gemv/gemv.hpp"
#include "host/job.hpp"
#include "host/report.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

// Fields that describe the host rather than the wafer.
nlohmann::json wafer_part(nlohmann::json j) {
  j.erase("threads");
  j.erase("threads_detail");
  j.erase("host_seconds");
  j.erase("pe_cycles_per_second");
  j.erase("tile_cycles_per_second");
  j.erase("peak_rss_bytes");
  return j;
}

RunConfig gemv_config(uint32_t mesh_w, uint32_t mesh_h, uint32_t rows, uint32_t cols) {
  RunConfig cfg;
  cfg.source = "in-memory";
  cfg.mesh = {mesh_w, mesh_h};
  auto g = std::make_shared<GemvConfig>();
  g->rows = rows, g->cols = cols, g->seed = 5;
  cfg.kernel_config = g;
  return cfg;
}

TEST(Determinism, GemvReportIsIdenticalAt1_2And4Threads) {
  for (RunConfig cfg : {gemv_config(16, 16, 300, 300), gemv_config(13, 11, 101, 97), gemv_config(7, 29, 60, 45)}) {
    JobResult one = run_job(cfg, 1);
    EXPECT_EQ(one.report["threads"], 1);
    for (unsigned threads : {2u, 4u}) {
      JobResult many = run_job(cfg, threads);
      EXPECT_EQ(many.report["threads"], threads);
      EXPECT_EQ(wafer_part(many.report), wafer_part(one.report)) << threads << " threads";
      ASSERT_EQ(many.result.size(), one.result.size());
      EXPECT_EQ(0, std::memcmp(many.result.data(), one.result.data(), one.result.size() * sizeof(float)));
    }
  }
}

// The report says how the run was shared (threads_detail): the bands each worker stepped and the
// work the kernel placed on each, and the fraction of the run each waited at the barrier (host
// time: a fraction per worker, none with one worker). A GEMV on 16x16 fills its mesh alike: at 2
// workers rows 0-7 and 8-15, equal work; at 1, one band with all of it.
TEST(Determinism, TheReportSaysHowARunWasSharedAmongItsWorkers) {
  const RunConfig cfg = gemv_config(16, 16, 300, 300);
  const nlohmann::json two = run_job(cfg, 2).report["threads_detail"];
  EXPECT_EQ(two["bands_of"], "rows");
  EXPECT_EQ(two["bands"], nlohmann::json::parse("[[0, 8, 0], [8, 16, 1]]"));
  ASSERT_EQ(two["work_per_worker"].size(), 2u);
  EXPECT_GT(two["work_per_worker"][0].get<uint64_t>(), 256u);  // a program on every PE, and routes
  EXPECT_EQ(two["work_per_worker"][0], two["work_per_worker"][1]);
  ASSERT_EQ(two["waiting"].size(), 2u);
  for (const auto& f : two["waiting"]) EXPECT_TRUE(f.get<double>() >= 0 && f.get<double>() <= 1) << f;
  const nlohmann::json one = run_job(cfg, 1).report["threads_detail"];
  EXPECT_FALSE(one.contains("waiting"));
  EXPECT_EQ(one["bands"], nlohmann::json::parse("[[0, 16, 0]]"));
  EXPECT_EQ(one["work_per_worker"][0].get<uint64_t>(), 2 * two["work_per_worker"][0].get<uint64_t>());
}

// A congested fabric (many flows crossing block boundaries, backpressure from slow PEs) gives
// the same arrival cycle for every wavelet at any thread count.
MachineSpec congested_spec(uint32_t hop_latency = 2) {
  MachineSpec s = test::spec(hop_latency);
  s.io_bytes_per_cycle = 20;  // 5 wavelets/cycle shared by 12 ports: rational rates
  return s;
}
constexpr MeshShape kCongested{12, 12};

// Every row carries colour (y % 2) west -> east; every even column colour 3 north -> south.
// `rotated`: the same fabric turned half a turn (tile (x, y) at (w-1-x, h-1-y), every side its
// opposite), built in the same order: every row east -> west and every column south -> north,
// hops whose dst comes before their src in tile order (Lane::kLateBack at one worker). By the
// symmetry each arrival is the unturned fabric's, and each link's counters its turned link's.
Coord turned(Coord c, bool rotated) { return rotated ? Coord{kCongested.width - 1 - c.x, kCongested.height - 1 - c.y} : c; }
Dir turned(Dir d, bool rotated) { return rotated && d != Dir::Ramp ? opposite(d) : d; }

void build_congested(Wafer& wafer, bool rotated = false) {
  const uint32_t w = kCongested.width, h = kCongested.height;
  Mesh& m = wafer.mesh();
  const auto route = [&](Coord c, Colour col, Dir rx, Dir tx) {
    m.set_route(turned(c, rotated), col, Route::make(turned(rx, rotated), {turned(tx, rotated)}));
  };
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) route({x, y}, Colour(y % 2), Dir::West, Dir::East);
    IngressPort& in = m.add_ingress(turned({0, y}, rotated), turned(Dir::West, rotated));
    for (uint32_t k = 0; k < 200; ++k) in.enqueue(Wavelet{y * 1000 + k, Colour(y % 2)});
    m.add_egress(turned({w - 1, y}, rotated), turned(Dir::East, rotated));
  }
  for (uint32_t x = 0; x < w; x += 2) {
    for (uint32_t y = 0; y < h; ++y) route({x, y}, 3, Dir::North, Dir::South);
    IngressPort& in = m.add_ingress(turned({x, 0}, rotated), turned(Dir::North, rotated));
    for (uint32_t k = 0; k < 300; ++k) in.enqueue(Wavelet{x * 1000 + k, 3});
    m.add_egress(turned({x, h - 1}, rotated), turned(Dir::South, rotated));
  }
}

std::vector<uint64_t> link_counters_of(const Mesh& m) {
  std::vector<uint64_t> c;
  for (const Link& l : m.links()) c.insert(c.end(), {l.counters.wavelets, l.counters.busy_cycles(), l.counters.backpressure_cycles});
  return c;
}

std::vector<EgressArrival> arrivals_of(const Mesh& m) {
  std::vector<EgressArrival> all;
  for (const EgressPort& p : m.egress_ports()) all.insert(all.end(), p.received().begin(), p.received().end());
  return all;
}

std::vector<EgressArrival> congested_run(unsigned threads, EngineResult* engine = nullptr,
                                         std::vector<uint64_t>* link_counters = nullptr, bool every_run_ahead_level = false) {
  Wafer wafer(congested_spec(), kCongested);
  build_congested(wafer);
  Mesh& m = wafer.mesh();
  wafer.finalize(threads);
  RunHooks hooks;
  hooks.every_run_ahead_level = every_run_ahead_level;
  WaferRun run = wafer.run(1'000'000, hooks);
  if (engine) *engine = run.engine;
  if (link_counters) *link_counters = link_counters_of(m);
  return arrivals_of(m);
}

// Every egress arrival of a run at `threads` workers is the one-worker run's, in cycle and payload.
void expect_arrivals(const std::vector<EgressArrival>& many, const std::vector<EgressArrival>& one, unsigned threads) {
  ASSERT_EQ(many.size(), one.size()) << threads << " threads";
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(many[i].cycle, one[i].cycle) << i << ", " << threads << " threads";
    EXPECT_EQ(many[i].wavelet.payload, one[i].wavelet.payload) << i << ", " << threads << " threads";
  }
}

// Each link's counters keyed by where the link would be in the unturned fabric (its source tile
// and side turned back: build_congested), in that order.
std::vector<std::array<uint64_t, 6>> link_counters_unturned(const Mesh& m, bool rotated) {
  std::vector<std::array<uint64_t, 6>> c;
  for (const Link& l : m.links()) {
    const Coord at = turned(m.shape().coord(l.src), rotated);
    c.push_back({at.x, at.y, uint64_t(turned(l.dir, rotated)), l.counters.wavelets, l.counters.busy_cycles(), l.counters.backpressure_cycles});
  }
  std::sort(c.begin(), c.end());
  return c;
}

// The congested fabric turned half a turn (every flow east -> west or south -> north, so at one
// worker no hop's credits can go straight back, and every one goes back late, Router::kLateNote):
// every arrival the unturned fabric's in cycle and payload, and every link's counters its turned
// link's (an independent check of the late credits' timing: the unturned fabric's hops hand theirs
// straight back), at 1 worker, and at 2 and 3 with every run-ahead level taken every cycle; with
// hops of 2 cycles, as the other congested-fabric tests, and of 1, where a late credit folded in a
// cycle early (a router's own returns at `now` taken for those at `now - 1`) changes arrivals.
TEST(Determinism, TheCongestedFabricTurnedHalfATurnArrivesAsItDoes) {
  for (uint32_t latency : {2u, 1u}) {
    Wafer plain(congested_spec(latency), kCongested);
    build_congested(plain);
    plain.finalize(1);
    plain.run(1'000'000);
    const auto one = arrivals_of(plain.mesh());
    const auto one_links = link_counters_unturned(plain.mesh(), false);
    ASSERT_EQ(one.size(), 12u * 200 + 6u * 300);
    for (unsigned threads : {1u, 2u, 3u}) {
      Wafer wafer(congested_spec(latency), kCongested);
      build_congested(wafer, true);
      wafer.finalize(threads);
      const std::string what = std::to_string(threads) + " threads, hops of " + std::to_string(latency) + " cycles";
      if (threads == 1) {
        size_t late = 0;
        for (TileId t = 0; t < kCongested.tiles(); ++t)
          for (const Lane& lane : wafer.mesh().router(t)->lanes) late += (lane.pass_here & Lane::kLateBack) != 0;
        EXPECT_EQ(late, 12u * 11 + 6u * 11) << what;  // every lane fed by a hop
      }
      RunHooks hooks;
      hooks.every_run_ahead_level = true;
      const WaferRun run = wafer.run(1'000'000, hooks);
      expect_arrivals(arrivals_of(wafer.mesh()), one, threads);
      EXPECT_EQ(link_counters_unturned(wafer.mesh(), true), one_links) << what;
      if (threads > 1) { EXPECT_GT(run.engine.steps_further_ahead, 1000u) << what; }
    }
  }
}

TEST(Determinism, CongestedFabricArrivalsAreIdenticalAt1_2_3And4Threads) {
  auto one = congested_run(1);
  ASSERT_EQ(one.size(), 12u * 200 + 6u * 300);
  for (unsigned threads : {2u, 3u, 4u}) expect_arrivals(congested_run(threads), one, threads);
}

// Many more workers than the other tests (and than this host has cores), up to a band a row (12
// workers on 12 rows: every hop south or north crosses between two workers, and a worker has
// two neighbours to take mail from): the same arrivals at 7, 9 and 12 workers.
TEST(Determinism, CongestedFabricArrivalsAreIdenticalUpToABandARow) {
  auto one = congested_run(1);
  for (unsigned threads : {7u, 9u, 12u}) {
    EngineResult engine;
    auto many = congested_run(threads, &engine);
    EXPECT_EQ(engine.waiting.size(), threads);
    expect_arrivals(many, one, threads);
  }
}

// The run-ahead (fabric/cycle_engine.hpp): with several workers, a worker steps its tiles one
// hop or more inside its band at the next cycle, and while the others are still busy, those two
// or more hops inside at the cycle after, and so on, before the others have finished this one.
// The congested fabric has flows across every band edge every cycle; the run must take steps
// ahead, and every arrival must be the one-worker run's, in cycle and payload, every link's
// counters the same, and the same cycles simulated. Once as the engine goes ahead by itself (as
// far as the others' pace lets it), once with every level taken every cycle (the deepest
// schedule, whatever this host's timing), which must take steps two cycles ahead or more.
TEST(Determinism, StepsTakenAheadOfTheBarrierChangeNoArrival) {
  EngineResult single;
  std::vector<uint64_t> single_links;
  const auto one = congested_run(1, &single, &single_links);
  EXPECT_EQ(single.steps_ahead, 0u);  // one worker has no barrier to wait at
  for (bool every_level : {false, true})
    for (unsigned threads : {2u, 3u}) {
      EngineResult engine;
      std::vector<uint64_t> links;
      const auto many = congested_run(threads, &engine, &links, every_level);
      const std::string what = std::to_string(threads) + " threads" + (every_level ? ", every level" : "");
      EXPECT_GT(engine.steps_ahead, 1000u) << what;
      if (every_level) { EXPECT_GT(engine.steps_further_ahead, 1000u) << what; }
      EXPECT_LE(engine.steps_further_ahead, engine.steps_ahead) << what;
      EXPECT_EQ(links, single_links) << what;
      EXPECT_EQ(engine.cycles_stepped, single.cycles_stepped) << what;
      EXPECT_EQ(engine.last_active, single.last_active) << what;
      ASSERT_EQ(many.size(), one.size());
      for (size_t i = 0; i < one.size(); ++i) {
        ASSERT_EQ(many[i].cycle, one[i].cycle) << what << ", arrival " << i;
        ASSERT_EQ(many[i].wavelet.payload, one[i].wavelet.payload) << what << ", arrival " << i;
      }
    }
}

// The same with programs on the PEs: a GEMV on 24 x 24 PEs (at two workers four bands of six
// rows, at three three of eight: most bands have rows two or more hops in), every run-ahead
// level taken every cycle at 2 and 3 workers. The result vector, every PE's counters and every link's counters, the cycles and
// the cycles simulated are the one-worker run's, bit for bit.
TEST(Determinism, PesSteppedSeveralCyclesAheadComputeTheOneWorkerResult) {
  struct Out {
    std::vector<float> y;
    std::vector<uint64_t> pe_counts, links;
    EngineResult engine;
    Cycle cycles = 0;
  };
  auto run = [](unsigned threads) {
    Wafer wafer(MachineSpec{}, {24, 24});
    GemvProblem p = GemvProblem::random(240, 192, 5);
    GemvKernel k(wafer, p, 24, 24);
    wafer.finalize(threads);
    RunHooks hooks;
    hooks.every_run_ahead_level = true;
    WaferRun r = wafer.run(10'000'000, hooks);
    Out o;
    o.y = k.result();
    for (const Pe& pe : wafer.pes()) {
      const PeCounters& c = pe.counters;
      o.pe_counts.insert(o.pe_counts.end(), {c.receive_cycles, c.fmac_cycles, c.move_cycles, c.send_cycles, c.stall_send_cycles,
                                             c.tasks, c.dsd_ops, c.wavelets_in, c.wavelets_out, c.macs});
    }
    o.links = link_counters_of(wafer.mesh());
    o.engine = r.engine;
    o.cycles = r.cycles;
    return o;
  };
  const Out one = run(1);
  ASSERT_EQ(one.y.size(), 240u);
  for (unsigned threads : {2u, 3u}) {
    const Out many = run(threads);
    EXPECT_GT(many.engine.steps_further_ahead, 0u) << threads << " threads";
    ASSERT_EQ(many.y.size(), one.y.size());
    EXPECT_EQ(std::memcmp(many.y.data(), one.y.data(), one.y.size() * sizeof(float)), 0) << threads << " threads";
    EXPECT_EQ(many.pe_counts, one.pe_counts) << threads << " threads";
    EXPECT_EQ(many.links, one.links) << threads << " threads";
    EXPECT_EQ(many.cycles, one.cycles) << threads << " threads";
    EXPECT_EQ(many.engine.cycles_stepped, one.engine.cycles_stepped) << threads << " threads";
  }
}

// Colour 0 down every column of `m`, from an ingress port on the north edge to an egress port
// on the south edge: every tile routed, every vertical hop a link.
void route_every_column_south(Mesh& m) {
  const MeshShape shape = m.shape();
  for (uint32_t y = 0; y < shape.height; ++y)
    for (uint32_t x = 0; x < shape.width; ++x) m.set_route({x, y}, 0, Route::make(Dir::North, {Dir::South}));
  for (uint32_t x = 0; x < shape.width; ++x) {
    m.add_ingress({x, 0}, Dir::North);
    m.add_egress({x, shape.height - 1}, Dir::South);
  }
}

// How deep inside its band each tile is (Mesh::band_depths), by hand: a 4 x 10 mesh routed
// everywhere, in two bands of five rows. Rows 4 and 5 face the other band (0), each row further
// in one more, up to Mesh::kRunAheadLevels (4). One worker: no edge, every tile at the most.
TEST(Determinism, ATilesDepthInItsBandIsItsHopsFromTheBandEdge) {
  const MeshShape shape{4, 10};
  Mesh m(test::spec(1), shape);
  route_every_column_south(m);
  const Partition two = Partition::make(shape, 2, 1);
  ASSERT_EQ(two.blocks.size(), 2u);
  ASSERT_EQ(two.blocks[0].y1, 5u);
  m.finalize(two);
  const uint8_t by_row[10] = {4, 3, 2, 1, 0, 0, 1, 2, 3, 4};
  for (uint32_t y = 0; y < shape.height; ++y)
    for (uint32_t x = 0; x < shape.width; ++x) EXPECT_EQ(m.band_depths()[shape.id({x, y})], by_row[y]) << "row " << y;
  m.repartition(Partition::make(shape, 1));
  for (uint8_t d : m.band_depths()) EXPECT_EQ(d, Mesh::kRunAheadLevels);
}

// Wafer::set_workers between runs (what a training run's passes do when the engine picks their
// workers by measurement): the congested fabric run in pieces of 97 cycles, stopped at each
// cycle limit with wavelets and credits in flight across band edges, each piece on another
// worker count (1, 2, 3, 2, 1, ...). Every arrival and link counter is the one-piece one-worker
// run's.
TEST(Determinism, ChangingTheWorkersBetweenRunsChangesNoArrival) {
  std::vector<uint64_t> single_links;
  const auto one = congested_run(1, nullptr, &single_links);
  Wafer wafer(congested_spec(), kCongested);
  build_congested(wafer);
  wafer.finalize(2);
  const unsigned counts[] = {1, 2, 3, 2};
  size_t pieces = 0;
  for (;; ++pieces) {
    wafer.set_workers(counts[pieces % 4]);
    ASSERT_EQ(wafer.workers(), counts[pieces % 4]);
    if (!wafer.run(97).engine.hit_cycle_limit) break;
    ASSERT_LT(pieces, 1000u) << "the run does not end";
  }
  EXPECT_GT(pieces, 8u);  // it did change its workers with work in flight, many times
  EXPECT_EQ(link_counters_of(wafer.mesh()), single_links);
  const auto many = arrivals_of(wafer.mesh());
  ASSERT_EQ(many.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(many[i].cycle, one[i].cycle) << "arrival " << i;
    ASSERT_EQ(many[i].wavelet.payload, one[i].wavelet.payload) << "arrival " << i;
  }
}

// The run-ahead and the straight-back credits hold for the partition the mesh's links were
// assigned for: an engine run on another one is refused before a tile steps, where it would
// step tiles ahead of what they read.
TEST(Determinism, AnEngineRunOnAnotherPartitionThanTheMeshsIsRefused) {
  struct Tiles {
    Mesh m;
    uint64_t steps = 0;
    void seed(const Block& b, Scheduler& s) {
      if (b.x0 == 0 && b.y0 == 0) s.schedule(0, 0);  // one step, of tile 0, at cycle 0
    }
    void step(TileId, Cycle, Scheduler&) { ++steps; }
    Mesh& mesh() { return m; }
  };
  const MeshShape shape{8, 8};
  Tiles tiles{Mesh(test::spec(1), shape)};
  route_every_column_south(tiles.m);
  tiles.m.finalize(Partition::make(shape, 2, 1));
  CycleEngine<Tiles> engine;
  EXPECT_NO_THROW(engine.run(tiles, Partition::make(shape, 2, 1), 0, 10));
  EXPECT_EQ(tiles.steps, 1u);
  EXPECT_THROW(engine.run(tiles, Partition::make(shape, 3, 1), 0, 10), std::logic_error);
  std::vector<uint32_t> work(shape.tiles(), 1);
  for (TileId t = 0; t < 2 * shape.width; ++t) work[t] = 100;  // the first two rows: a band of their own
  const Partition moved = Partition::make(shape, 2, 1, work);
  ASSERT_NE(moved.owner, Partition::make(shape, 2, 1).owner);
  EXPECT_THROW(engine.run(tiles, moved, 0, 10), std::logic_error);
  EXPECT_EQ(tiles.steps, 1u);  // the refused runs stepped nothing
}

// A hop's dst returns credits straight into its src's lane (Lane::credit_back) instead of through
// the link's queue only when src is stepped before dst in every cycle, so that src, having
// stepped, sees the credit from the next cycle on as it would from the queue. The order a worker
// steps a cycle's tiles in (fabric/cycle_engine.hpp): with run-ahead, the tiles deeper in its
// band first (how many hops from a tile linked to another worker's, at most
// Mesh::kRunAheadLevels; how many of those depths a cycle's first pass takes depends on the
// host), each depth in tile order; without, tile order. Every other hop inside a band returns
// them late (Lane::kLateBack, into src's Router::late_), and a hop between two bands as mail.
// Checked on flows in all four directions, for row bands, several bands per worker and column
// bands: every hop that takes the straight way is ordered so in all of them, and every hop that
// is takes it. The depths here are worked out independently: the bands are whole rows or
// columns, so a tile's hops to its band's edge are its grid distance to the nearest band-edge
// tile of its worker.
TEST(Determinism, CreditsGoStraightBackOnlyToARouterSteppedEarlierInEveryCycle) {
  struct Case {
    MeshShape shape;
    unsigned workers, bands;
  };
  for (const Case& c : {Case{{12, 12}, 1, 16}, Case{{12, 12}, 2, 1}, Case{{12, 12}, 3, 16}, Case{{16, 40}, 3, 4},
                        Case{{40, 2}, 4, 16}}) {
    const uint32_t w = c.shape.width, h = c.shape.height;
    Mesh m(test::spec(1), c.shape);
    // Rows alternate west->east (colour 0) and east->west (1); columns north->south (2) and
    // south->north (3), each from an ingress port to an egress port.
    for (uint32_t y = 0; y < h; ++y) {
      const bool east = y % 2 == 0;
      const Colour col = east ? 0 : 1;
      for (uint32_t x = 0; x < w; ++x) m.set_route({x, y}, col, east ? Route::make(Dir::West, {Dir::East}) : Route::make(Dir::East, {Dir::West}));
      m.add_ingress({east ? 0 : w - 1, y}, east ? Dir::West : Dir::East).enqueue(Wavelet{y, col});
      m.add_egress({east ? w - 1 : 0, y}, east ? Dir::East : Dir::West);
    }
    for (uint32_t x = 0; x < w; ++x) {
      const bool south = x % 2 == 0;
      const Colour col = south ? 2 : 3;
      for (uint32_t y = 0; y < h; ++y) m.set_route({x, y}, col, south ? Route::make(Dir::North, {Dir::South}) : Route::make(Dir::South, {Dir::North}));
      m.add_ingress({x, south ? 0 : h - 1}, south ? Dir::North : Dir::South).enqueue(Wavelet{x, col});
      m.add_egress({x, south ? h - 1 : 0}, south ? Dir::South : Dir::North);
    }
    const Partition p = Partition::make(c.shape, c.workers, c.bands);
    m.finalize(p);
    std::vector<TileId> at_edge;
    for (const Link& l : m.links())
      if (l.kind == LinkKind::Hop && p.owner[l.src] != p.owner[l.dst]) at_edge.insert(at_edge.end(), {l.src, l.dst});
    std::vector<uint32_t> depth(c.shape.tiles(), Mesh::kRunAheadLevels);
    for (TileId t = 0; t < c.shape.tiles(); ++t)
      for (TileId e : at_edge) {
        if (p.owner[e] != p.owner[t]) continue;
        const Coord a = c.shape.coord(t), b = c.shape.coord(e);
        const uint32_t grid = (a.x > b.x ? a.x - b.x : b.x - a.x) + (a.y > b.y ? a.y - b.y : b.y - a.y);
        depth[t] = std::min(depth[t], grid);
      }
    for (TileId t = 0; t < c.shape.tiles(); ++t) ASSERT_EQ(m.band_depths()[t], depth[t]) << c.workers << " workers, " << to_string(c.shape.coord(t));
    size_t hops = 0, straight = 0;
    for (const Link& l : m.links()) {
      if (l.kind != LinkKind::Hop) continue;
      ++hops;
      const bool one_worker = p.owner[l.src] == p.owner[l.dst];
      const bool earlier_in_tile_order = l.src < l.dst;
      const bool deeper_or_as_deep = depth[l.src] >= depth[l.dst];
      const bool ordered = one_worker && earlier_in_tile_order && deeper_or_as_deep;
      const std::string hop = std::to_string(c.workers) + " workers, hop " + to_string(c.shape.coord(l.src)) + " -> " +
                              to_string(c.shape.coord(l.dst));
      EXPECT_EQ(l.credit_into, one_worker ? m.router(l.src) : nullptr) << hop;
      straight += ordered;
      // The lane at dst that receives over this hop points at its sender's credit count toward
      // it when the hop is ordered so, and returns its credits late when it is not.
      const Router& dst = *m.router(l.dst);
      for (const Lane& lane : dst.lanes) {
        if (lane.rx != opposite(l.dir)) continue;
        EXPECT_EQ(lane.credit_back, ordered ? &m.router(l.src)->lane(lane.colour)->credits[size_t(l.dir)] : nullptr) << hop;
        EXPECT_EQ(bool(lane.pass_here & Lane::kLateBack), one_worker && !ordered) << hop;
      }
    }
    EXPECT_GT(straight, hops / 4) << c.workers << " workers";  // most same-worker hops east or south take it
    if (c.workers == 1) { EXPECT_EQ(straight, hops / 2); }          // one worker: exactly the hops east and south
  }
}

// A router has room for Router::kLateSlots late credits a cycle; where its neighbours could
// return more, none of theirs goes back late (Router::late_refused), and they take the link's
// queue. By hand: router (2, 1) of a 3 x 3 mesh sends three colours west to (1, 1), which sends
// them on west, north and south, and three north to (2, 0), which sends them north, east and
// west: both hops' dst comes first in tile order, and each of the two can pop three lanes in a
// cycle, six in all. Without the sixth colour, five: all late. Every wavelet arrives either way.
TEST(Determinism, ARouterTakesNoMoreLateCreditsACycleThanItHasRoomFor) {
  for (const Colour colours : {Colour(6), Colour(5)}) {
    Wafer wafer(test::spec(1), {3, 3});
    Mesh& m = wafer.mesh();
    const auto r = [](Dir rx, Dir tx) { return Route::make(rx, {tx}); };
    // colour: the route at (2, 1), then along its way to an egress port.
    m.set_route({2, 1}, 0, r(Dir::East, Dir::West)), m.set_route({1, 1}, 0, r(Dir::East, Dir::West)), m.set_route({0, 1}, 0, r(Dir::East, Dir::West));
    m.set_route({2, 1}, 1, r(Dir::East, Dir::West)), m.set_route({1, 1}, 1, r(Dir::East, Dir::North)), m.set_route({1, 0}, 1, r(Dir::South, Dir::North));
    m.set_route({2, 1}, 2, r(Dir::East, Dir::West)), m.set_route({1, 1}, 2, r(Dir::East, Dir::South)), m.set_route({1, 2}, 2, r(Dir::North, Dir::South));
    m.set_route({2, 1}, 3, r(Dir::East, Dir::North)), m.set_route({2, 0}, 3, r(Dir::South, Dir::North));
    m.set_route({2, 1}, 4, r(Dir::East, Dir::North)), m.set_route({2, 0}, 4, r(Dir::South, Dir::East));
    if (colours == 6) m.set_route({2, 1}, 5, r(Dir::East, Dir::North)), m.set_route({2, 0}, 5, r(Dir::South, Dir::West)), m.set_route({1, 0}, 5, r(Dir::East, Dir::West)), m.set_route({0, 0}, 5, r(Dir::East, Dir::West));
    IngressPort& in = m.add_ingress({2, 1}, Dir::East);
    for (uint32_t k = 0; k < 300; ++k) in.enqueue(Wavelet{k, Colour(k % colours)});
    m.add_egress({0, 1}, Dir::West), m.add_egress({1, 0}, Dir::North), m.add_egress({1, 2}, Dir::South);
    m.add_egress({2, 0}, Dir::North), m.add_egress({2, 0}, Dir::East);
    if (colours == 6) m.add_egress({0, 0}, Dir::West);
    wafer.finalize(1);
    const std::string what = std::to_string(colours) + " colours";
    EXPECT_EQ(m.router(m.shape().id({2, 1}))->late_refused, colours == 6) << what;
    for (const Coord dst : {Coord{1, 1}, Coord{2, 0}})
      for (const Lane& lane : m.router(m.shape().id(dst))->lanes) {
        EXPECT_EQ(lane.credit_back, nullptr) << what;
        EXPECT_EQ(bool(lane.pass_here & Lane::kLateBack), colours == 5) << what << ", " << to_string(dst) << " colour " << int(lane.colour);
      }
    wafer.run(100'000);
    EXPECT_EQ(arrivals_of(m).size(), 300u) << what;
  }
}

// Scheduler::step_due with a bitmap steps only the due tiles in it, in tile order, and leaves
// the others due for the rest of the cycle (across bitmap words and summary words).
TEST(Scheduler, SteppingSomeOfACyclesTilesLeavesTheRestDue) {
  Scheduler s(5000);
  s.start_at(10);
  const std::vector<TileId> due = {1, 5, 63, 64, 70, 130, 4095, 4096, 4999};
  for (TileId t : due) s.schedule(t, 11);
  s.schedule(7, 12);  // a later cycle, untouched
  std::vector<uint64_t> only(Scheduler::bitmap_words(5000), 0);
  for (TileId t : {5u, 64u, 130u, 4096u, 3000u}) only[t >> 6] |= uint64_t(1) << (t & 63);  // 3000 is not due
  std::vector<TileId> first, rest;
  s.begin_cycle(11);
  EXPECT_TRUE(s.step_due([&](TileId t) { first.push_back(t); }, only.data()));
  EXPECT_EQ(first, (std::vector<TileId>{5, 64, 130, 4096}));
  s.take_mail([](const Wake&) { ADD_FAILURE() << "no worker posted anything"; return TileId(0); }, [](unsigned) { return 0u; });
  EXPECT_TRUE(s.step_due([&](TileId t) { rest.push_back(t); }));
  EXPECT_EQ(rest, (std::vector<TileId>{1, 63, 70, 4095, 4999}));
  EXPECT_FALSE(s.step_due([&](TileId) { ADD_FAILURE() << "stepped twice"; }));
  EXPECT_EQ(s.next_event(), 12u);
}

// A wake through a tile's Place (a link's dst_place: its word, bit, summary word and summary bit
// worked out once) wakes the tile its number names, across bitmap words and summary words (a
// summary word covers 4,096 tiles): the same tiles, in tile order, as wakes by number.
TEST(Scheduler, AWakeThroughAPlaceWakesTheTileItsNumberNames) {
  const size_t tiles = 3 * 4096 + 200;
  const std::vector<TileId> due = {0, 1, 63, 64, 4095, 4096, 4097, 8191, 8192, 12287, 12288, TileId(tiles - 1)};
  for (int how = 0; how < 2; ++how) {
    Scheduler s(tiles);
    s.start_at(0);
    for (TileId t : due) {
      const Scheduler::Place p = Scheduler::place_of(t);
      EXPECT_EQ(p.word * 64 + p.shift, t);
      EXPECT_EQ(p.summary_word * 64 + p.summary_shift, p.word);
      if (how == 0) s.wake_next(p);
      else s.wake_next(t);
    }
    std::vector<TileId> stepped;
    s.begin_cycle(1);
    s.take_mail([](const Wake&) { ADD_FAILURE() << "no worker posted anything"; return TileId(0); }, [](unsigned) { return 0u; });
    EXPECT_TRUE(s.step_due([&](TileId t) { stepped.push_back(t); }));
    EXPECT_EQ(stepped, due) << (how == 0 ? "through places" : "by number");
    EXPECT_EQ(s.next_event(), kNever);
  }
  EXPECT_THROW(Scheduler(Scheduler::kMaxTiles + 1), std::invalid_argument);
}

// Sparse traffic crossing block boundaries, with idle gaps the engine fast-forwards over: every
// wavelet still arrives exactly hops x latency after it entered, at any thread count.
TEST(Determinism, WaveletsCrossingBlocksArriveOnTimeAfterIdleGaps) {
  for (unsigned threads : {1u, 2u, 3u, 4u}) {
    for (uint32_t latency : {1u, 2u, 5u}) {
      const uint32_t w = 8;
      MachineSpec s = test::spec(latency);
      s.io_bytes_per_cycle = 4.0 / 37;  // one wavelet every 37 cycles
      Wafer wafer(s, {w, 1});
      for (uint32_t x = 0; x < w; ++x) wafer.mesh().set_route({x, 0}, 0, Route::make(Dir::West, {Dir::East}));
      IngressPort& in = wafer.mesh().add_ingress({0, 0}, Dir::West);
      for (uint32_t k = 0; k < 6; ++k) in.enqueue(Wavelet{k, 0});
      EgressPort& out = wafer.mesh().add_egress({w - 1, 0}, Dir::East);
      wafer.finalize(threads);
      WaferRun run = wafer.run(100000);
      ASSERT_EQ(out.received().size(), 6u) << threads << " threads, latency " << latency;
      for (uint32_t k = 0; k < 6; ++k) {
        const Cycle entered = 37 * k;  // the port's k-th slot at one wavelet every 37 cycles
        EXPECT_EQ(out.received()[k].cycle, entered + w * latency) << threads << " threads, k " << k;
      }
      EXPECT_EQ(run.cycles, out.received().back().cycle + 1);
    }
  }
}

// Sampling at interval boundaries sees counters brought up to the boundary, the same at any
// thread count, and sampling does not change the run.
struct Sample {
  Cycle boundary;
  uint64_t backpressure, wavelets;
  bool operator==(const Sample&) const = default;
};

std::vector<Sample> sampled_gemv(unsigned threads, Cycle interval, uint64_t* final_backpressure,
                                 Cycle max_cycles = 1'000'000) {
  MachineSpec spec;
  Wafer wafer(spec, {9, 7});
  GemvProblem p = GemvProblem::random(70, 90, 3);
  GemvKernel k(wafer, p);
  wafer.finalize(threads);
  std::vector<Sample> samples;
  auto totals_now = [&](Cycle b) {
    Sample s{b, 0, 0};
    for (const Link& l : wafer.mesh().links()) s.backpressure += l.counters.backpressure_cycles, s.wavelets += l.counters.wavelets;
    for (const Pe& pe : wafer.pes()) s.backpressure += pe.counters.stall_send_cycles;
    return s;
  };
  RunHooks hooks;
  if (interval) {
    hooks.sample_interval = interval;
    hooks.sample = [&](Cycle b) { samples.push_back(totals_now(b)); };
  }
  WaferRun run = wafer.run(max_cycles, hooks);
  *final_backpressure = totals_now(run.cycles).backpressure;
  return samples;
}

TEST(Determinism, SamplesAtIntervalBoundariesAreIdenticalAtAnyThreadCount) {
  uint64_t unsampled = 0, bp1 = 0;
  sampled_gemv(1, 0, &unsampled);
  auto one = sampled_gemv(1, 40, &bp1);
  EXPECT_EQ(bp1, unsampled);  // sampling changes nothing
  ASSERT_GT(one.size(), 3u);
  for (size_t i = 0; i + 1 < one.size(); ++i) EXPECT_EQ(one[i].boundary, 40 * (i + 1));
  for (size_t i = 1; i < one.size(); ++i) EXPECT_GE(one[i].backpressure, one[i - 1].backpressure);
  EXPECT_EQ(one.back().backpressure, unsampled);  // the last sample is the end of the run
  EXPECT_GT(unsampled, 0u);
  // A run cut off at a boundary ends with the counters the sample saw there.
  for (size_t i : {size_t(0), one.size() / 2}) {
    uint64_t cut = 0;
    sampled_gemv(1, 0, &cut, one[i].boundary);
    EXPECT_EQ(cut, one[i].backpressure) << "boundary " << one[i].boundary;
  }
  for (unsigned threads : {2u, 4u}) {
    uint64_t bp = 0;
    EXPECT_EQ(sampled_gemv(threads, 40, &bp), one) << threads << " threads";
    EXPECT_EQ(bp, unsampled);
  }
}

// A sparse training run: the masks, the weights after two steps, the loss and every pass's
// counters are the same at 1, 2 and 3 engine threads and any init parallelism.
TEST(Determinism, SparseTrainingIsIdenticalAtAnyThreadCountAndInitParallelism) {
  RunConfig cfg;
  cfg.source = "in-memory";
  cfg.kernel = "fc_train";
  cfg.mesh = {4, 3};
  cfg.train.layers = {30, 17, 6};
  cfg.train.batch_size = 6;
  cfg.train.memoryx.optimizer = {"adam", 0.01f};
  cfg.train.memoryx.encoding = StreamEncoding::Sparse;
  cfg.train.memoryx.sparsity.enabled = true;
  cfg.train.memoryx.sparsity.level = 0.6;
  cfg.train.memoryx.sparsity.method = SparsityInit::TopK;
  std::vector<float> x(6 * 30);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 101) / 101.0f;
  const std::vector<uint8_t> y = {0, 1, 2, 3, 4, 5};
  struct Outcome {
    Checkpoint ckpt;
    std::vector<double> losses;
    std::vector<nlohmann::json> stats;
  };
  auto run = [&](unsigned threads, uint32_t init_parallel) {
    RunConfig c = cfg;
    c.train.memoryx.init.max_parallel = init_parallel;
    Cluster t(cluster_config(c), threads);
    Outcome o;
    for (int s = 0; s < 2; ++s) o.losses.push_back(t.train_step(x.data(), y.data()).loss);
    for (size_t l = 0; l < 2; ++l) o.stats.push_back(t.forward_stats()[l].to_json()), o.stats.push_back(t.backward_stats()[l].to_json());
    o.ckpt = t.memoryx().checkpoint();
    return o;
  };
  const Outcome one = run(1, 1);
  for (auto [threads, par] : {std::pair{2u, 4u}, std::pair{3u, 2u}}) {
    const Outcome many = run(threads, par);
    EXPECT_EQ(many.losses, one.losses) << threads << " threads";
    EXPECT_EQ(many.stats, one.stats) << threads << " threads";
    ASSERT_EQ(many.ckpt.tensors.size(), one.ckpt.tensors.size());
    for (size_t i = 0; i < one.ckpt.tensors.size(); ++i)
      EXPECT_EQ(0, std::memcmp(many.ckpt.tensors[i].data.data(), one.ckpt.tensors[i].data.data(), one.ckpt.tensors[i].size() * 4))
          << one.ckpt.tensors[i].name << " at " << threads << " threads";
  }
  EXPECT_GT(one.stats[0]["macs_skipped"].get<uint64_t>(), 0u);  // the run was sparse
}

TEST(Partition, BandsCoverTheMeshExactlyOnceAndShareRowsEvenly) {
  for (unsigned workers : {1u, 2u, 3u, 4u, 7u, 16u}) {
    MeshShape shape{130, 40};
    Partition p = Partition::make(shape, workers, 16);
    EXPECT_EQ(p.workers, workers);
    std::vector<int> cover(shape.tiles(), 0);
    std::vector<uint32_t> rows(workers, 0);
    for (const Block& b : p.blocks) {
      rows[b.worker] += b.y1 - b.y0;
      for (uint32_t y = b.y0; y < b.y1; ++y)
        for (uint32_t x = b.x0; x < b.x1; ++x) {
          ++cover[shape.id({x, y})];
          EXPECT_EQ(p.owner[shape.id({x, y})], b.worker);
        }
    }
    for (int c : cover) EXPECT_EQ(c, 1);
    auto [lo, hi] = std::minmax_element(rows.begin(), rows.end());
    // Each round of `workers` bands gives every worker one, the tallest to the worker with the
    // fewest rows so far, so no worker is more than one band (at most 2 of these 40 rows, the
    // bands being 1 or 2 rows high) ahead of another. (Dealt plainly in turn, the 1, 1, 1, 2
    // pattern of 32 bands gave 24 and 16 rows at two workers.)
    const auto bands = uint32_t(p.blocks.size());
    EXPECT_GE(bands, workers);
    uint32_t tallest = 0;
    for (const Block& b : p.blocks) tallest = std::max(tallest, b.y1 - b.y0);
    EXPECT_LE(tallest, 40 / bands + 1);
    EXPECT_LE(*hi - *lo, tallest) << workers << " workers";
    if (workers == 2) {
      EXPECT_EQ(rows, (std::vector<uint32_t>{20, 20}));
    } else if (workers == 4) {
      EXPECT_EQ(rows, (std::vector<uint32_t>(4, 10)));
    }
    // Every worker holds a band of every round (a sweeping wave finds each of them).
    for (uint32_t first = 0; first + workers <= bands; first += workers) {
      std::vector<int> served(workers, 0);
      for (uint32_t b = first; b < first + workers; ++b) ++served[p.blocks[b].worker];
      EXPECT_EQ(served, std::vector<int>(workers, 1)) << "round at band " << first;
    }
  }
  EXPECT_EQ(Partition::make({5, 3}, 8).workers, 5u);  // too few rows: column bands, one per column
  EXPECT_EQ(Partition::make({512, 1}, 2).workers, 2u);
}

// Bands hold equal shares of the work, worked out by hand: the line before which the work comes
// nearest to each band's share, each band at least one line; with every tile alike (or all zero)
// the bands of equal tile counts; a work figure per tile or an error.
TEST(Partition, BandsHoldEqualSharesOfTheWork) {
  auto edges = [](const Partition& p) {
    std::vector<std::array<uint32_t, 5>> e;
    for (const Block& b : p.blocks) e.push_back({b.x0, b.y0, b.x1, b.y1, b.worker});
    return e;
  };
  using E = std::vector<std::array<uint32_t, 5>>;
  // 32 x 8 with work on the four northmost rows: 128 busy tiles, one band each; the cut at row 2.
  std::vector<uint32_t> north(32 * 8, 0);
  std::fill(north.begin(), north.begin() + 4 * 32, 1u);
  EXPECT_EQ(edges(Partition::make({32, 8}, 2, 16, north)), (E{{0, 0, 32, 2, 0}, {0, 2, 32, 8, 1}}));
  EXPECT_EQ(edges(Partition::make({32, 8}, 2)), (E{{0, 0, 32, 4, 0}, {0, 4, 32, 8, 1}}));  // by tiles
  // Rows of work 3, 1, 1, 1 on a 1 x 4 mesh: half the work is row 0's.
  EXPECT_EQ(edges(Partition::make({1, 4}, 2, 16, std::vector<uint32_t>{3, 1, 1, 1})), (E{{0, 0, 1, 1, 0}, {0, 1, 1, 4, 1}}));
  // Rows of work 0, 0, 0, 5: every band keeps a row, the last band the row with the work.
  EXPECT_EQ(edges(Partition::make({1, 4}, 3, 16, std::vector<uint32_t>{0, 0, 0, 5})),
            (E{{0, 0, 1, 2, 0}, {0, 2, 1, 3, 1}, {0, 3, 1, 4, 2}}));
  // A row with work on its first 100 columns: column bands, cut at column 50.
  std::vector<uint32_t> west(512, 0);
  std::fill(west.begin(), west.begin() + 100, 2u);
  EXPECT_EQ(edges(Partition::make({512, 1}, 2, 16, west)), (E{{0, 0, 50, 1, 0}, {50, 0, 512, 1, 1}}));
  // Every tile alike, or no work anywhere: the bands of equal tile counts, however many.
  for (unsigned workers : {1u, 2u, 3u, 7u})
    for (MeshShape shape : {MeshShape{130, 40}, MeshShape{16, 16}, MeshShape{300, 2}}) {
      const auto plain = edges(Partition::make(shape, workers));
      EXPECT_EQ(edges(Partition::make(shape, workers, 16, std::vector<uint32_t>(shape.tiles(), 7))), plain);
      EXPECT_EQ(edges(Partition::make(shape, workers, 16, std::vector<uint32_t>(shape.tiles(), 0))), plain);
    }
  EXPECT_THROW(Partition::make({4, 4}, 2, 16, std::vector<uint32_t>(15, 1)), std::invalid_argument);
}

// A kernel on part of a mesh (saturated flows on the north rows of 32 x 8, the rest idle): the
// wafer's estimate counts a PE's program and each colour through a router, the two workers' bands
// share the busy rows, and every arrival and link counter is the one-worker run's at 2 and 3
// workers. With a route on every idle row as well, the estimate sees every row alike and the cut
// falls where equal tile counts put it.
TEST(Partition, AWaferCutsItsBandsByTheWorkItsKernelPlaced) {
  auto build = [](unsigned threads, bool idle_routes) {
    MachineSpec s = test::spec(1);
    s.io_bytes_per_cycle = 0;  // every port at link rate
    auto wafer = std::make_unique<Wafer>(s, MeshShape{32, 8});
    Mesh& m = wafer->mesh();
    for (uint32_t y = 0; y < 8; ++y) {
      if (y >= 4 && !idle_routes) continue;
      for (uint32_t x = 0; x < 32; ++x) m.set_route({x, y}, Colour(y < 4 ? 0 : 1), Route::make(Dir::West, {Dir::East}));
      IngressPort& in = m.add_ingress({0, y}, Dir::West);
      if (y < 4)
        for (uint32_t k = 0; k < 300; ++k) in.enqueue(Wavelet{y * 1000 + k, 0});
      m.add_egress({31, y}, Dir::East);
    }
    wafer->finalize(threads);
    return wafer;
  };
  auto one = build(1, false);
  const std::vector<uint32_t> work = one->work_estimate();
  EXPECT_EQ(work[0], 1u);            // one colour through (0,0), no program
  EXPECT_EQ(work[5 * 32 + 3], 0u);   // an idle tile
  EXPECT_EQ(build(1, true)->work_estimate()[5 * 32 + 3], 1u);
  one->run(1'000'000);
  const auto single = arrivals_of(one->mesh());
  const auto single_links = link_counters_of(one->mesh());
  ASSERT_EQ(single.size(), 4u * 300);
  for (unsigned threads : {2u, 3u}) {
    auto many = build(threads, false);
    const Partition& p = many->partition();
    if (threads == 2) {
      ASSERT_EQ(p.blocks.size(), 2u);
      EXPECT_EQ(p.blocks[0].y1, 2u);  // two busy rows each, not four and none
    }
    many->run(1'000'000);
    EXPECT_EQ(link_counters_of(many->mesh()), single_links) << threads << " threads";
    const auto got = arrivals_of(many->mesh());
    ASSERT_EQ(got.size(), single.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].cycle, single[i].cycle) << threads << " threads, arrival " << i;
      ASSERT_EQ(got[i].wavelet.payload, single[i].wavelet.payload) << threads << " threads, arrival " << i;
    }
  }
  EXPECT_EQ(build(2, true)->partition().blocks[0].y1, 4u);
}

}  // namespace
}  // namespace wse
