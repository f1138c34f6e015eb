#pragma once
// One direction of a connection between two ports: router->router (a mesh hop), router->PE and
// PE->router (the RAMP), or router->edge (egress). Wavelets go forward, credits come back.
#include <cstdint>

#include "fabric/geometry.hpp"
#include "fabric/link_queue.hpp"
#include "fabric/scheduler.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

class Router;

struct LinkCounters {
  uint64_t wavelets = 0;             // wavelets that entered the link
  uint64_t backpressure_cycles = 0;  // cycles a wavelet waited for this link with no credit
  // An egress link at a share of the edge's I/O below a wavelet a cycle holds each wavelet until
  // its port can take the next (EgressPort::accept): the cycles beyond one a wavelet, counted
  // there. 0 on every other link.
  uint64_t extra_hold_cycles = 0;
  // Cycles in which the link carried a wavelet: a link takes one wavelet a cycle and each holds
  // it for one cycle, so these are its wavelets (not a second counter on every hop), and for a
  // slower egress link the cycles it held them beyond that. (Those were left out until the
  // forty-sixth round: GEMV at 1 byte a cycle of I/O showed its egress links, busy 44% of the
  // run, at 0.3%.) The last wavelet's hold may reach past the end of a run: Wafer::busy_cycles.
  uint64_t busy_cycles() const { return wavelets + extra_hold_cycles; }
};

enum class LinkKind : uint8_t { Hop, RampDown, RampUp, Egress };

// Two cache lines, aligned. The first holds all that a hop inside one worker's band touches: the
// wavelets' queue; what the sender reads (latency, where to wake dst) and counts; and what the
// receiver reads to hand a credit straight back (src, credit_into). So a hop's send and the
// next router's credit return share one line, where they used to need both (one L1 miss more a
// hop on a long row: docs/performance-history.md, eleventh round). The second holds the credits' queue
// (such a hop does not use it: Lane::credit_back), the backpressure count and what set-up reads.
struct alignas(64) Link {
  LinkQueue<Flit> flits;  // src -> dst
  uint8_t latency = 1;
  // Set per run by Mesh::assign_notes: src and dst are stepped by one worker (always so for a
  // RAMP link) and the latency is one, so a wavelet's wake is Scheduler::wake_next().
  bool dst_next = false;
  TileId src = 0;  // dst == src for RAMP links
  // Set per run by Mesh::assign_notes for a hop inside one worker's band: dst returns credits to
  // src's router without `credits`. Where src is stepped before dst in every cycle (an earlier
  // place in the worker's order), straight into src's lanes (Lane::credit_back): src has stepped
  // this cycle already, so it sees such a credit from the next cycle on, as it would from the
  // queue. Elsewhere late, into src's Router::late_ (Lane::kLateBack), which src folds in from
  // the next cycle on.
  Router* credit_into = nullptr;
  // Where a wake of dst lands in a scheduler's bitmaps, worked out once (Mesh::build_links).
  Scheduler::Place dst_place;
  // Written only by the src side. Its wavelets end the first line; its backpressure cycles,
  // counted only while a wavelet waits, and an egress link's extra hold begin the second.
  LinkCounters counters;

  LinkQueue<Credit> credits;  // dst -> src
  TileId dst = 0;             // unused for egress
  Dir dir = Dir::East;        // direction of travel as seen from src
  LinkKind kind = LinkKind::Hop;
  // src and dst are stepped by one worker (set with dst_next): a credit's wake is wake_next().
  bool same_worker = false;
  // Set per run by Mesh::assign_notes for a hop between two workers' bands: its wavelets and
  // credits cross as mail (Scheduler::post_flit, post_credit), and the worker that reads each
  // queue is the one that writes it, when it takes its mail. Its dst reads the wavelets from a
  // shadow of it that the mesh keeps (Mesh::assign_notes; its index in `shadow`), so that no
  // line of either is written by one worker's core and read by the other's: the link itself is src's (the credits, the counts, what a send reads),
  // the shadow dst's (the wavelets' queue, what a credit's return reads).
  bool cross_worker = false;
  uint32_t index = 0;   // in Mesh::links(), which a credit's mail names it by (a shadow's too)
  uint32_t shadow = 0;  // a crossing hop's shadow, which a wavelet's mail names
};
static_assert(sizeof(Link) == 128, "a link is two cache lines");

}  // namespace wse
