#pragma once
// The cycle engine: runs a set of tiles cycle by cycle on N workers of a Boost.Asio thread pool.
//
// Each worker owns one rectangular block of the mesh and steps only the tiles its scheduler says
// are due (idle tiles cost nothing). Everything a tile reads was committed in an earlier cycle
// (every latency is >= 1 cycle), so the order in which tiles are stepped within a cycle, and the
// thread that steps them, cannot change any result. After each cycle all workers meet at one
// barrier that also agrees on the next cycle with any work, so idle stretches are skipped.
//
// `Tiles` provides:
//   void seed(const Block&, Scheduler&);            // first events of the block's tiles
//   void step(TileId, Cycle now, Scheduler&);       // one cycle of one tile
//   Mesh& mesh();                                   // for the links that cross blocks
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "fabric/cycle_barrier.hpp"
#include "fabric/mesh.hpp"
#include "fabric/partition.hpp"
#include "fabric/scheduler.hpp"

namespace wse {

struct EngineResult {
  Cycle last_active = 0;      // last cycle in which any tile was stepped
  Cycle stopped_at = 0;       // the cycle the run ended on
  bool hit_cycle_limit = false;
  uint64_t cycles_stepped = 0;  // cycles actually simulated (the rest were fast-forwarded)
};

// Called by worker 0 between cycles, at most every `progress_every` simulated cycles.
using ProgressFn = std::function<void(Cycle now)>;

template <class Tiles>
class CycleEngine {
 public:
  EngineResult run(Tiles& tiles, const Partition& partition, Cycle max_cycles, ProgressFn progress = {}) {
    const unsigned workers = unsigned(partition.blocks.size());
    Mesh& mesh = tiles.mesh();
    // Cross-block links: the consumer of each direction polls its queue at the start of each
    // cycle (what has arrived) and at the end (what will arrive, so fast-forward cannot skip it).
    std::vector<std::vector<Link*>> incoming(workers), outgoing(workers);
    for (Link& l : mesh.links()) {
      if (!l.flits.cross_thread()) continue;
      incoming[partition.owner[l.dst]].push_back(&l);
      outgoing[partition.owner[l.src]].push_back(&l);
    }
    stepped_.assign(mesh.shape().tiles(), kNever);
    CycleBarrier barrier(workers);
    std::vector<std::exception_ptr> errors(workers);
    std::vector<EngineResult> results(workers);

    auto worker = [&](unsigned w) {
      Scheduler sched(mesh.shape().tiles());
      CycleVote vote;
      try {
        tiles.seed(partition.blocks[w], sched);
      } catch (...) {
        errors[w] = std::current_exception();
        vote.failed = true;
      }
      EngineResult& res = results[w];
      Cycle now = 0, last_progress = 0;
      for (;;) {
        if (!vote.failed) {
          try {
            std::vector<TileId>& due = sched.advance_to(now);
            for (Link* l : incoming[w])
              if (const Flit* f = l->flits.front(); f && f->arrival <= now) sched.schedule(l->dst, now);
            for (Link* l : outgoing[w])
              if (const Credit* c = l->credits.front(); c && c->visible <= now) sched.schedule(l->src, now);
            for (size_t i = 0; i < due.size(); ++i) {
              TileId t = due[i];
              if (stepped_[t] == now) continue;
              stepped_[t] = now;
              tiles.step(t, now, sched);
              vote.last = now;
            }
            sched.finish_bucket(due);
            // Whatever is already queued on an incoming cross-block link is this worker's to wake
            // for: the producer's note of it lasts only one cycle's vote.
            for (Link* l : incoming[w])
              if (const Flit* f = l->flits.front()) sched.schedule(l->dst, std::max(f->arrival, now + 1));
            for (Link* l : outgoing[w])
              if (const Credit* c = l->credits.front()) sched.schedule(l->src, std::max(c->visible, now + 1));
          } catch (...) {
            errors[w] = std::current_exception();
            vote.failed = true;
          }
        }
        vote.next = vote.failed ? kNever : sched.next_event();
        ++res.cycles_stepped;
        CycleVote all = barrier.arrive(w, vote);
        if (all.failed || all.next == kNever || all.next >= max_cycles) {
          res.last_active = all.last;
          res.stopped_at = all.next == kNever ? all.last : std::min(all.next, max_cycles);
          res.hit_cycle_limit = !all.failed && all.next != kNever;
          break;
        }
        if (w == 0 && progress && res.cycles_stepped - last_progress >= 4096) {
          last_progress = res.cycles_stepped;
          progress(all.next);
        }
        now = all.next;
      }
    };

    if (workers == 1) {
      worker(0);
    } else {
      boost::asio::thread_pool pool(workers);
      for (unsigned w = 0; w < workers; ++w) boost::asio::post(pool, [&, w] { worker(w); });
      pool.join();
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    return results[0];
  }

 private:
  std::vector<Cycle> stepped_;
};

}  // namespace wse
