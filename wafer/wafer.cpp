#include "wafer/wafer.hpp"

#include <algorithm>
#include <chrono>

#include "core/errors.hpp"

namespace wse {

Wafer::Wafer(const MachineSpec& spec, MeshShape shape)
    : mesh_(spec, shape), arena_(shape.tiles(), spec.sram_bytes_per_pe), pes_(shape.tiles()), programmed_(shape.tiles(), 0) {
  if (shape.width == 0 || shape.height == 0) throw UsageError("mesh width and height must be at least 1");
  for (TileId t = 0; t < pes_.size(); ++t) {
    pes_[t].coord = shape.coord(t);
    pes_[t].sram.bind(arena_.tile(t), spec.sram_bytes_per_pe);
  }
}

void Wafer::finalize(unsigned threads) {
  work_ = work_estimate();
  partition_ = Partition::make(shape(), threads, 16, work_);
  mesh_.finalize(partition_);
  for (TileId t = 0; t < pes_.size(); ++t) {
    Pe& pe = pes_[t];
    Router* r = mesh_.router(t);
    std::vector<Colour> rx;
    std::vector<std::pair<Colour, uint8_t>> tx;
    if (r) {
      for (const Lane& lane : r->lanes) {
        if (r->tx_union(lane) & bit(Dir::Ramp)) rx.push_back(lane.colour);
        if (r->rx_union(lane) & bit(Dir::Ramp)) tx.push_back({lane.colour, lane.cap});
      }
    }
    if (!rx.empty() && !pe.program)
      throw RouteError("route at tile " + to_string(pe.coord) + " colour " + std::to_string(rx.front()) +
                       ": delivers to the PE (RAMP), but no program is loaded on that PE");
    pe.attach(r ? r->out_link(Dir::Ramp) : nullptr, r ? r->in_link(Dir::Ramp) : nullptr, std::move(rx), tx, spec());
    pe.reset_counters();
  }
  finalized_ = true;
}

void Wafer::refuse_stale_links(const char* who) const {
  if (!mesh_.stale().empty()) throw std::logic_error(std::string(who) + ": " + mesh_.stale() + " after finalize (finalize again first)");
}

void Wafer::set_workers(unsigned threads) {
  if (!finalized_) throw std::logic_error("Wafer::set_workers before finalize");
  refuse_stale_links("Wafer::set_workers");
  if (Partition::workers_for(shape(), threads) == partition_.workers) return;
  partition_ = Partition::make(shape(), threads, 16, work_);
  mesh_.repartition(partition_);
}

uint64_t Wafer::tiles_in_use() const {
  const std::vector<uint32_t> work = work_estimate();
  return uint64_t(std::count_if(work.begin(), work.end(), [](uint32_t w) { return w != 0; }));
}

std::vector<uint32_t> Wafer::work_estimate() const {
  std::vector<uint32_t> work(pes_.size(), 0);
  for (TileId t = 0; t < pes_.size(); ++t) {
    const Router* r = mesh_.router(t);
    work[t] = uint32_t(programmed_[t] != 0) + uint32_t(r ? r->lanes.size() : 0);
  }
  return work;
}

void Wafer::seed(const Block& b, Scheduler& s) {
  for (uint32_t y = b.y0; y < b.y1; ++y) {
    for (uint32_t x = b.x0; x < b.x1; ++x) {
      TileId t = shape().id({x, y});
      if (pes_[t].wants_start()) s.schedule(t, clock_);  // start tasks run when the run begins
      if (const Router* r = mesh_.router(t)) {
        for (const IngressPort* p : r->ingress)
          if (p && !p->drained()) s.schedule(t, std::max(clock_, p->next_ready()));
        // What a run stopped at its cycle limit left in the fabric: its wakes went with that
        // run's agenda.
        r->left_over(clock_, [&](Cycle c) { s.schedule(t, c); });
      }
    }
  }
}

std::vector<std::string> Wafer::stuck(size_t max_lines, size_t* total) const {
  std::vector<std::string> lines;
  size_t n = 0;
  for (TileId t = 0; t < pes_.size(); ++t) {
    if (const Router* r = mesh_.router(t))
      for (std::string& s : r->waiting_on(clock_)) {
        if (lines.size() < max_lines) lines.push_back(std::move(s));
        ++n;
      }
    if (pes_[t].program) {
      std::string s = pes_[t].waiting_on(clock_);
      if (s.empty()) continue;
      if (lines.size() < max_lines) lines.push_back("PE " + to_string(pes_[t].coord) + ": " + s);
      ++n;
    }
  }
  if (total) *total = n;
  return lines;
}

void Wafer::reset_counters() {
  settle(clock_);
  for (Link& l : mesh_.links()) l.counters = {};
  for (TileId t = 0; t < pes_.size(); ++t) {
    if (Router* r = mesh_.router(t))
      for (Lane& lane : r->lanes) lane.counters = {};
    pes_[t].reset_counters();
    pes_[t].sram.reset_high_water();
  }
}

void Wafer::settle(Cycle cycle) {
  for (TileId t = 0; t < pes_.size(); ++t) {
    if (Router* r = mesh_.router(t)) r->settle(cycle);
    pes_[t].settle(cycle);
  }
}

WaferRun Wafer::run(Cycle max_cycles, RunHooks hooks) {
  if (!finalized_) throw std::logic_error("Wafer::run before finalize");
  refuse_stale_links("Wafer::run");
  WaferRun run;
  run.start = clock_;
  run.threads = partition_.workers;
  for (TileId t = 0; t < pes_.size(); ++t) {
    pes_[t].rearm();
    if (Router* r = mesh_.router(t)) r->pe_programmed = programmed_[t];  // (step_rest()'s copy)
  }
  // A new run's switches start at their base routes with fresh filter counters; one that goes on
  // from a run stopped by its cycle limit keeps them, and the wavelets a switch holds (reset,
  // those were lost and their senders' credits with them: a later deadlock).
  if (!stopped_at_limit_) mesh_.reset_switches();
  auto t0 = std::chrono::steady_clock::now();
  auto sample = hooks.sample;
  Cycle last_sample = clock_;
  if (sample) {
    hooks.sample = [&](Cycle boundary) {
      settle(boundary);
      sample(boundary);
      last_sample = boundary;
    };
  }
  // Routers keep where they read their queues to themselves during the run (LinkQueue::publish).
  try {
    run.engine = engine_.run(*this, partition_, clock_, clock_ + max_cycles, hooks);
  } catch (...) {
    mesh_.publish_reads();
    throw;
  }
  run.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  mesh_.publish_reads();
  Cycle last = run.engine.last_active;
  for (const EgressPort& p : mesh_.egress_ports())
    if (!p.received().empty()) last = std::max(last, p.received().back().cycle);
  const Cycle end = run.engine.hit_cycle_limit ? clock_ + max_cycles : last + 1;
  if (!run.engine.hit_cycle_limit) {
    // Nothing is due any more: if work is left, nothing can ever move it (a deadlock).
    // (The clock first at the end: what is held is described at the cycle the run stopped at.)
    const Cycle start = clock_;
    clock_ = end;
    size_t total = 0;
    const std::vector<std::string> lines = stuck(12, &total);
    if (!lines.empty()) {
      std::string msg = "the run stopped at cycle " + std::to_string(end) + " with work left and nothing able to move (a deadlock):";
      for (const std::string& s : lines) msg += "\n  " + s;
      if (total > lines.size()) msg += "\n  ... and " + std::to_string(total - lines.size()) + " more";
      throw HangError(msg);
    }
    clock_ = start;
  }
  run.cycles = end - clock_;
  stopped_at_limit_ = run.engine.hit_cycle_limit;
  if (sample && hooks.sample_interval) {
    // The boundaries after the last tile's step: the engine stops once nothing is due, before
    // an egress arrival still on its way (with hop_latency_cycles > 1) and before a cycle limit,
    // and no interval may run longer than the interval (the dump's readers refuse one).
    for (Cycle b = last_sample + hooks.sample_interval; b < end; b += hooks.sample_interval) hooks.sample(b);
  }
  settle(end);
  if (sample && hooks.sample_interval && end > last_sample) sample(end);
  clock_ = end;
  return run;
}

}  // namespace wse
