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
  // Cycles in which the link carried a wavelet: a link takes one wavelet a cycle and each holds
  // it for one cycle, so these are its wavelets (not a second counter on every hop).
  uint64_t busy_cycles() const { return wavelets; }
};

enum class LinkKind : uint8_t { Hop, RampDown, RampUp, Egress };

// Two cache lines, aligned: the two queues' indices in the first, what a sender reads (latency,
// ends, where to wake dst) and its counters in the second. (An egress link's port is its
// router's, Router::egress, so the line has room.)
struct alignas(64) Link {
  // The queues first: they are what a router's step touches.
  LinkQueue<Flit> flits;      // src -> dst
  LinkQueue<Credit> credits;  // dst -> src
  TileId src = 0, dst = 0;  // dst == src for RAMP links; unused for egress
  Dir dir = Dir::East;      // direction of travel as seen from src
  LinkKind kind = LinkKind::Hop;
  uint8_t latency = 1;
  // Set per run by Mesh::assign_notes: src and dst are stepped by one worker (always so for a
  // RAMP link), so a credit's wake is Scheduler::wake_next(); and, with a latency of one, a
  // wavelet's too.
  bool same_worker = false, dst_next = false;
  LinkCounters counters;      // written only by the src side
  // Set per run by Mesh::assign_notes for a hop whose src router is stepped before its dst in
  // every cycle (one worker, and an earlier place in its order): dst returns credits straight
  // into src's lanes (Lane::credit_back) instead of through `credits`. src has stepped this
  // cycle already, so it sees such a credit from the next cycle on, as it would from the queue.
  Router* credit_into = nullptr;
  // Where a wake of dst lands in a scheduler's bitmaps, worked out once (Mesh::build_links): the
  // wake of every wavelet sent needs no shifts.
  Scheduler::Place dst_place;
};

}  // namespace wse
