#pragma once
// One wafer: the fabric's mesh of routers and a PE on every tile, stepped together by the cycle
// engine. This is where the PE meets the fabric, through the RAMP links only.
#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "fabric/cycle_engine.hpp"
#include "fabric/mesh.hpp"
#include "pe/pe.hpp"
#include "pe/sram.hpp"

namespace wse {

struct WaferRun {
  EngineResult engine;
  Cycle start = 0;   // the wafer clock when the run began
  Cycle cycles = 0;  // the run's length: last event (stepped tile or wavelet arrival) + 1 - start
  double host_seconds = 0;
  unsigned threads = 1;
};

class Wafer {
 public:
  Wafer(const MachineSpec& spec, MeshShape shape);

  const MachineSpec& spec() const { return mesh_.spec(); }
  MeshShape shape() const { return mesh_.shape(); }
  Mesh& mesh() { return mesh_; }
  const Mesh& mesh() const { return mesh_; }
  NameTable& names() { return names_; }

  Pe& pe(Coord c) { return pes_[shape().id(c)]; }
  const Pe& pe(Coord c) const { return pes_[shape().id(c)]; }
  const std::vector<Pe>& pes() const { return pes_; }

  void load(Coord c, const Program* program) {
    pe(c).program = program;
    programmed_[shape().id(c)] = program != nullptr;
  }
  SramRef allocate(Coord c, std::string_view name, uint32_t bytes) {
    return pe(c).sram.allocate(c, names_, names_.intern(name), bytes);
  }

  // Validates routes and programs against each other and builds links for `threads` workers.
  void finalize(unsigned threads);
  // Between runs of a finalized wafer: the workers the next runs use (Partition::make's count for
  // `threads`). Only which links are polled or noted and which credits go straight back change;
  // results do not depend on it.
  void set_workers(unsigned threads);
  unsigned workers() const { return partition_.workers; }
  // Tiles a placed kernel uses: a program on the PE or a colour routed through the router (the
  // tiles with work_estimate() above zero).
  uint64_t tiles_in_use() const;
  // What stepping each tile will cost, as far as the placed kernel tells before the run: one for
  // a program on its PE and one per colour routed through its router (each a stream of wavelets
  // to take in and pass on). Partition::make cuts the worker bands by it.
  std::vector<uint32_t> work_estimate() const;
  // The bands the runs are stepped in (Partition::make over work_estimate()).
  const Partition& partition() const { return partition_; }
  // Runs from the wafer's clock until nothing is left to do, or for max_cycles. The clock then
  // stands at the end of the run, so a later run (the next layer, the next pass) continues it
  // with SRAM, routes and counters as they were. With hooks.sample_interval > 0, counters are
  // brought up to each boundary (the run's start + k * interval, every one before the run's end)
  // before hooks.sample(boundary) sees them, and sample is called once more at the end of the run
  // (boundary = the run's end cycle) if that is not itself a boundary. Each run starts its PEs'
  // start tasks again (Pe::rearm) and, unless the last run stopped at its cycle limit, its
  // switches at their base routes with fresh filter counters.
  WaferRun run(Cycle max_cycles, RunHooks hooks = {});
  // Zeroes every link, lane and PE counter and restarts SRAM high-water marks from what is in use
  // now, so what follows (one layer's pass, say) is measured on its own.
  void reset_counters();
  // Every tile that still holds work (a lane with wavelets, a port not drained, a PE not idle), a
  // line each, at most `max_lines` (for a hang diagnosis), as of the wafer's clock: after a run,
  // the cycle it stopped at, the first it did not step; empty when the wafer is quiet.
  std::vector<std::string> stuck(size_t max_lines, size_t* total = nullptr) const;
  // Counts sleeping routers' backpressure and open send stalls up to `cycle`.
  void settle(Cycle cycle);
  Cycle clock() const { return clock_; }
  // A link's busy cycles (LinkCounters::busy_cycles) up to the wafer's clock: an egress link's
  // last wavelet may hold it past the end of the run (its port's next slot is later), and that
  // part is not the run's. So a link is never busy for more cycles than the run has.
  uint64_t busy_cycles(const Link& l) const {
    uint64_t busy = l.counters.busy_cycles();
    if (l.kind == LinkKind::Egress)
      if (const Router* r = mesh_.router(l.src); r && l.dir != Dir::Ramp)
        if (const EgressPort* p = r->egress[size_t(l.dir)]; p && p->next_slot() > clock_)
          busy -= std::min<uint64_t>(l.counters.extra_hold_cycles, p->next_slot() - clock_);
    return busy;
  }
  // The wafer waits, quiet, until `cycle` (for what comes from off the wafer); no-op if past it.
  void idle_until(Cycle cycle) {
    if (cycle <= clock_) return;
    settle(cycle);
    clock_ = cycle;
  }

  // The cycle engine's view of the tiles.
  void seed(const Block& b, Scheduler& s);
  // One cycle of one tile, through with_stepper() (the engine's only way in): the engine steps a
  // cycle's tiles through a Stepper made once per cycle, so the pointers it holds stay in
  // registers across the tiles, where a step through the Wafer would load them again after
  // every router's call (which might, for all the compiler knows, have changed them).
  // kDense: every tile has a router, side by side in tile order (Mesh::dense_routers()), so a
  // tile's router is found from its number alone; the choice is made once per cycle, where a
  // test on every step made it (two instructions a hop: fiftieth round).
  template <bool kDense>
  class Stepper {
   public:
    explicit Stepper(Wafer& w)
        : dense_(w.mesh_.dense_routers()), mesh_(&w.mesh_), programmed_(w.programmed_.data()), pes_(w.pes_.data()), spec_(&w.spec()) {}
    void step(TileId t, Cycle now, Scheduler& s) const {
      Router* r = kDense ? dense_ + t : mesh_->router(t);
#ifdef WSE_CHECK_INVARIANTS
      if (r != mesh_->router(t)) throw std::logic_error("Wafer::step: the dense routers are not the mesh's");
      if (r && r->pe_programmed != programmed_[t]) throw std::logic_error("Wafer::step: a router's copy of its PE's program flag is stale");
#endif
      if (!kDense && !r) {
        if (programmed_[t] && pes_[t].due(now)) pes_[t].step(t, now, s, *spec_);
        return;
      }
      r->maybe_ingest(t, now, s);
      // The PE and forward() only when one of them may have work: one test of two bytes in the
      // router's first line, where the common hop (no program, nothing to forward) took two tests
      // and a load of the wafer's flag (Router::step_rest()).
      if (!r->step_rest()) return;
      // After the ingest and behind that test: a blocked router always wants an output, and
      // the ingest reads and writes nothing begin_step() does (Router::begin_step()), so a hop
      // with nothing else to do skips its test.
      r->begin_step(now);
      if (r->pe_programmed && pes_[t].due(now)) pes_[t].step(t, now, s, *spec_);
      if (r->may_forward(now)) r->forward(t, now, s);
    }

   private:
    Router* dense_;
    Mesh* mesh_;
    const uint8_t* programmed_;
    Pe* pes_;
    const MachineSpec* spec_;
  };
  // `f(stepper)` with the Stepper this mesh takes; returns what f returns.
  template <class F>
  decltype(auto) with_stepper(F&& f) {
    if (mesh_.dense_routers()) return f(Stepper<true>(*this));
    return f(Stepper<false>(*this));
  }

 private:
  // Refuses a run, or a new partition, while the mesh has routes its links were not built for.
  void refuse_stale_links(const char* who) const;
  Mesh mesh_;
  SramArena arena_;
  NameTable names_;
  std::vector<Pe> pes_;
  std::vector<uint8_t> programmed_;  // per tile: its PE has a program (a byte each, so a step of a
                                    // tile without one does not read the PE)
  Partition partition_;
  std::vector<uint32_t> work_;  // work_estimate() at finalize
  Cycle clock_ = 0;
  bool finalized_ = false;
  bool stopped_at_limit_ = false;  // the last run hit its cycle limit: the next one goes on from it
  CycleEngine<Wafer> engine_;      // its workers' schedulers, kept from run to run
};

}  // namespace wse
