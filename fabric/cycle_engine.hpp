#pragma once
// The cycle engine: runs a set of tiles cycle by cycle on N workers of a Boost.Asio thread pool.
//
// Each worker owns some bands of the mesh (fabric/partition.hpp) and steps only the tiles its
// scheduler says are due, once each, in tile order (idle tiles cost nothing); waking another
// worker's tile goes through a lock-free mailbox (fabric/scheduler.hpp). Everything a tile reads was committed in an earlier cycle
// (every latency is >= 1 cycle), so the order in which tiles are stepped within a cycle, and the
// thread that steps them, cannot change any result. After each cycle all workers meet at one
// barrier that also agrees on the next cycle with any work, so idle stretches are skipped.
//
// Run-ahead: a worker that has finished cycle c posts its vote and, while the others finish c,
// steps its tiles at least one hop inside its band (no link to another worker's tile) that are
// due at c+1: they read only what this worker's own tiles wrote at c or before. While the others
// are still at c it goes on: tiles at least two hops inside at c+2, three at c+3, up to
// Mesh::kRunAheadLevels (a wavelet or credit from another worker takes a cycle a hop to come in).
// After the barrier it takes the other workers' wakes and steps the rest of c+1 (its band-edge
// tiles). A cycle of uneven work is then absorbed by the next cycles' work instead of spinning at
// the barrier.
//
// `Tiles` provides:
//   void seed(const Block&, Scheduler&);            // first events of the block's tiles
//   void step(TileId, Cycle now, Scheduler&);       // one cycle of one tile, or instead
//   with_stepper(f): f called with an object that has that step(), made once per cycle
//                    (Wafer::Stepper; it returns what f returns)
//   Mesh& mesh();                                   // to size the cross-worker mailboxes
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <bit>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/host_ticks.hpp"
#include "fabric/cycle_barrier.hpp"
#include "fabric/mesh.hpp"
#include "fabric/partition.hpp"
#include "fabric/scheduler.hpp"

// A measuring tool's hook (scripts/line_transfers.sh, benchmarks/line_transfers.cpp): told which
// worker the calling thread is, at each worker's start, and -1 at its end. Weak, and defined in
// no build but that tool's, where it counts each worker's cache-line transfers apart.
extern "C" void wse_line_transfers_worker(int worker) __attribute__((weak));

namespace wse {

struct EngineResult {
  Cycle last_active = 0;      // last cycle in which any tile was stepped (or the start)
  Cycle stopped_at = 0;       // the cycle the run ended on
  bool hit_cycle_limit = false;
  uint64_t cycles_stepped = 0;  // cycles actually simulated (the rest were fast-forwarded)
  // Tile steps taken ahead of the barrier (all workers; the run-ahead below). How a run was
  // scheduled on the host, not a property of the wafer: it depends on the thread count.
  uint64_t steps_ahead = 0;
  uint64_t steps_further_ahead = 0;  // of those, the steps at c+2 or later (several cycles ahead)
  // Per worker, the fraction of the run's host time it spent waiting at the barrier for the
  // others (empty with one worker): what a second worker left on the table. Host, not wafer.
  std::vector<double> waiting;
  double mean_waiting() const {
    double sum = 0;
    for (double f : waiting) sum += f;
    return waiting.empty() ? 0.0 : sum / double(waiting.size());
  }
};

// Called by worker 0 at the run's start, then between cycles about every 256 simulated cycles (a
// call and a clock read: nothing beside a cycle's steps; at 4096 a 128 x 128 GEMV of 2,145 cycles
// and 1.3 s never moved its progress line past cycle 0).
using ProgressFn = std::function<void(Cycle now)>;

struct RunHooks {
  ProgressFn progress;
  // When sample_interval > 0, `sample(b)` is called for every boundary b = start + k *
  // sample_interval up to the last cycle with a step, once every cycle before b has run and none
  // after it, with all workers paused: it may read any tile's state. (The boundaries after it, up
  // to the run's end, are the caller's: Wafer::run samples them.)
  Cycle sample_interval = 0;
  std::function<void(Cycle boundary)> sample;
  // Tests: with several workers, step every run-ahead level each cycle, whether or not the other
  // workers have finished theirs (the engine stops going further ahead when they have), so that
  // the deepest levels are taken on every run.
  bool every_run_ahead_level = false;
};

// What steps a cycle's tiles: `f(stepper)` with Tiles' own stepper if it has one
// (with_stepper(), which may choose among several), else with a view that calls step().
template <class Tiles>
struct TilesStepper {
  Tiles* tiles;
  void step(TileId t, Cycle now, Scheduler& s) const { tiles->step(t, now, s); }
};
template <class Tiles, class F>
decltype(auto) with_stepper_of(Tiles& tiles, F&& f) {
  if constexpr (requires { tiles.with_stepper(f); }) return tiles.with_stepper(f);
  else return f(TilesStepper<Tiles>{&tiles});
}

template <class Tiles>
class CycleEngine {
 public:
  // Runs from cycle `start` until nothing is left to do or cycle `end` (exclusive).
  EngineResult run(Tiles& tiles, const Partition& partition, Cycle start, Cycle end, const RunHooks& hooks = {}) {
    const unsigned workers = partition.workers;
    Mesh& mesh = tiles.mesh();
    // Mailboxes for waking another worker's tiles, sized for the most that one cycle can post:
    // per link between two workers, one wavelet forward and a credit per colour back.
    std::vector<size_t> capacity(size_t(workers) * workers, 64);
    for (const Link& l : mesh.links()) {
      const uint16_t a = partition.owner[l.src], b = partition.owner[l.dst];
      if (a == b) continue;
      capacity[size_t(a) * workers + b] += 1 + MachineSpec::kMaxColours;
      capacity[size_t(b) * workers + a] += 1 + MachineSpec::kMaxColours;
    }
    std::vector<std::unique_ptr<Mailbox>> mail(size_t(workers) * workers);  // [from * workers + to]
    if (workers > 1)
      for (size_t i = 0; i < mail.size(); ++i) mail[i] = std::make_unique<Mailbox>(capacity[i]);
    CycleBarrier barrier(workers);
    std::vector<std::exception_ptr> errors(workers);
    std::vector<EngineResult> results(workers);
    std::vector<double> waiting(workers > 1 ? workers : 0, 0.0);
    // Per worker and level m = 1 .. kRunAheadLevels, the tiles it may step at c + m once every
    // worker has finished cycle c: those at least m hops inside its band (Mesh::band_depths).
    // What they read then was written by this worker's own tiles, at c + m - 1 or before.
    constexpr unsigned kLevels = Mesh::kRunAheadLevels;
    static_assert(kLevels <= Scheduler::kNear / 2, "the run-ahead's wakes stay in the scheduler's bitmaps");
    std::vector<std::vector<uint64_t>> ahead(workers > 1 ? size_t(workers) * kLevels : 0,
                                             std::vector<uint64_t>(Scheduler::bitmap_words(mesh.shape().tiles()), 0));
    // (A mesh whose links were never assigned, a test's tiles without routes, has no depths: no
    // tile is stepped ahead. One assigned for another partition would let tiles be stepped
    // ahead of what they read, and hand credits back out of order: a caller's bug.)
    if (workers > 1 && !mesh.band_depths().empty()) {
      if (!mesh.assigned_for(partition))
        throw std::logic_error("CycleEngine::run: the mesh's links were assigned for another partition (Mesh::repartition first)");
      const std::span<const uint8_t> depth = mesh.band_depths();
      for (TileId t = 0; t < depth.size(); ++t)
        for (unsigned m = 1; m <= depth[t]; ++m) ahead[partition.owner[t] * kLevels + m - 1][t >> 6] |= uint64_t(1) << (t & 63);
    }

    // The run-ahead's stepping, out of line so that the one-worker loop (the same code) keeps
    // the layout it has without it.
    auto step_ahead = [&](Scheduler& sched, Cycle ahead, const uint64_t* only, uint64_t& steps) __attribute__((noinline)) {
      sched.begin_ahead(ahead);
      return with_stepper_of(tiles, [&](const auto& st) {
        return sched.step_due([&](TileId t) { st.step(t, ahead, sched), ++steps; }, only);
      });
    };

    if (schedulers_.size() < workers) schedulers_.resize(workers);
    auto worker = [&](unsigned w) {
      struct Named {  // (only under scripts/line_transfers.sh: a null weak symbol elsewhere)
        explicit Named(unsigned index) {
          if (wse_line_transfers_worker) wse_line_transfers_worker(int(index));
        }
        ~Named() {
          if (wse_line_transfers_worker) wse_line_transfers_worker(-1);
        }
      } named(w);
      // Each worker's scheduler outlives the run, for the next one (a training step's passes are
      // several runs): what its wheel grew to stays allocated. Made, or reset, by its worker.
      std::unique_ptr<Scheduler>& mine = schedulers_[w];
      if (!mine || mine->tiles() != mesh.shape().tiles()) mine = std::make_unique<Scheduler>(mesh.shape().tiles());
      else mine->reset();
      Scheduler& sched = *mine;
      sched.start_at(start);
      if (workers > 1) {
        std::vector<Mailbox*> out(workers), in(workers);
        for (unsigned v = 0; v < workers; ++v) out[v] = mail[w * workers + v].get(), in[v] = mail[v * workers + w].get();
        sched.connect(partition.owner.data(), uint16_t(w), out, in);
      }
      auto deliver = [&mesh](const Wake& m) { return mesh.deliver(m); };
      // This worker's counts of its posts to each worker, carried by its votes; and, after a
      // wait, another worker's count of its posts to this one (CycleBarrier::mail).
      std::vector<uint32_t> posted(workers, 0);
      const std::span<const uint32_t> counts = workers > 1 ? std::span<const uint32_t>(posted) : std::span<const uint32_t>();
      auto posted_to_me = [&barrier, w](unsigned from) { return barrier.mail(w, from); };
      CycleVote vote;
      try {
        for (const Block& b : partition.blocks)
          if (b.worker == w) tiles.seed(b, sched);
      } catch (...) {
        errors[w] = std::current_exception();
        vote.failed = true;
      }
      // Counted in a local and stored once at the end: the workers' results lie side by side, so
      // counting into them on every cycle and step made the two workers' cores trade that line
      // (a third of the time of every step taken ahead, on two workers).
      EngineResult res;
      // Host ticks spent in barrier.wait, against the whole loop's: two readings of the
      // time-stamp counter a cycle, with no cost that the FC step or GEMV at two workers showed
      // (docs/performance-history.md, seventeenth round).
      uint64_t waited = 0;
      const uint64_t began_at = workers > 1 ? host_ticks() : 0;
      auto at_barrier = [&](auto&& wait) {  // a wait at the barrier, its ticks counted as waiting
        if (workers == 1) return wait();
        const uint64_t from = host_ticks();
        const CycleVote all = wait();
        waited += host_ticks() - from;
        return all;
      };
      Cycle now = start, last_progress = 0;
      // The run's start, once: a progress line's clock starts here, not 256 stepped cycles in
      // (seconds, on a full wafer's busy mesh).
      if (w == 0 && hooks.progress) hooks.progress(start);
      // Bit k: this worker stepped a tile ahead at cycle now + k. Such a cycle is in its vote
      // (though nothing may be left due then), so that the run visits every cycle in which any
      // tile steps, whichever worker stepped it and when: the cycles simulated, and what a run
      // reports, are the one-worker run's.
      uint32_t stepped_ahead = 0;
      vote.last = start;
      Cycle next_sample = hooks.sample_interval ? start + hooks.sample_interval : kNever;
      for (;;) {
        if (!vote.failed) {
          try {
            sched.begin_cycle(now);
            sched.take_mail(deliver, posted_to_me);
            if (with_stepper_of(tiles, [&](const auto& st) { return sched.step_due([&](TileId t) { st.step(t, now, sched); }); }))
              vote.last = std::max(vote.last, now);  // (steps taken ahead may have been later)
          } catch (...) {
            errors[w] = std::current_exception();
            vote.failed = true;
          }
        }
        vote.next = vote.failed ? kNever : sched.next_event();
        if (!vote.failed && (stepped_ahead >> 1)) vote.next = std::min(vote.next, now + 1 + Cycle(std::countr_zero(stepped_ahead >> 1)));
        ++res.cycles_stepped;
        // (the run-ahead below posts nothing: its tiles have no link to another worker's)
        if (workers > 1) sched.mail_posted(posted);
        const uint64_t gen = barrier.post(w, vote, counts);
        // Run-ahead: when this worker's next cycle is the very next one, every worker will run
        // it (no vote can be earlier), so instead of spinning at the barrier it steps its tiles
        // at least one hop inside its band at c+1, then, while the others are still at c, those
        // at least two hops inside at c+2, and so on (up to kLevels, not across the end of the
        // run or a sample boundary, where every tile must stop before the cycle). Each reads
        // only what this worker's own tiles wrote: stepping some of a cycle's tiles earlier is
        // only another order within the cycle, which cannot change a result (see above). What a
        // level leaves due (tiles nearer the edge) is stepped in a later round or after the
        // barrier; a level whose tiles were all stepped in an earlier round steps nothing.
        if (workers > 1 && !vote.failed && vote.next == now + 1) {
          try {
            for (unsigned m = 1; m <= kLevels; ++m) {
              const Cycle at = now + m;
              if (at >= end || at >= next_sample) break;
              if (m > 1 && !hooks.every_run_ahead_level && barrier.all_posted(gen)) break;
              if (step_ahead(sched, at, ahead[w * kLevels + m - 1].data(), m == 1 ? res.steps_ahead : res.steps_further_ahead))
                vote.last = std::max(vote.last, at), stepped_ahead |= 1u << m;
            }
          } catch (...) {
            errors[w] = std::current_exception();
            vote.failed = true;
          }
        }
        const CycleVote all = at_barrier([&] { return barrier.wait(w, gen); });
        if (all.failed || all.next == kNever || all.next >= end) {
          res.last_active = all.last;
          res.stopped_at = all.next == kNever ? all.last : std::min(all.next, end);
          res.hit_cycle_limit = !all.failed && all.next != kNever;
          break;
        }
        if (w == 0 && hooks.progress && res.cycles_stepped - last_progress >= 256) {
          last_progress = res.cycles_stepped;
          hooks.progress(all.next);
        }
        if (all.next >= next_sample) {  // every worker sees the same all.next: all pause here
          at_barrier([&] { return barrier.arrive(w, vote, counts); });
          for (; next_sample <= all.next; next_sample += hooks.sample_interval)
            if (w == 0 && !vote.failed) {
              try {
                hooks.sample(next_sample);
              } catch (...) {
                errors[w] = std::current_exception();
                vote.failed = true;
              }
            }
          if (at_barrier([&] { return barrier.arrive(w, vote, counts); }).failed) {
            res.last_active = all.last;
            res.stopped_at = all.next;
            break;
          }
        }
        stepped_ahead = all.next - now < 32 ? stepped_ahead >> (all.next - now) : 0;
        now = all.next;
      }
      // What the last cycle posted across band edges, into the queues it is for (every worker
      // has passed the last barrier, so every post is in), where the next run finds it.
      if (workers > 1) {
        sched.deliver_mail(deliver, posted_to_me);
        const uint64_t whole = host_ticks() - began_at;
        waiting[w] = whole ? double(waited) / double(whole) : 0.0;
      }
      results[w] = res;
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
    for (unsigned w = 1; w < workers; ++w) {
      results[0].steps_ahead += results[w].steps_ahead;
      results[0].steps_further_ahead += results[w].steps_further_ahead;
    }
    results[0].steps_ahead += results[0].steps_further_ahead;  // (counted apart: the first level, then the rest)
    results[0].waiting = std::move(waiting);
    return results[0];
  }

 private:
  std::vector<std::unique_ptr<Scheduler>> schedulers_;  // per worker, kept from run to run
};

}  // namespace wse
