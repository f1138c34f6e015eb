#pragma once
// The router of one tile: a lane per routed colour, links to its neighbours and its PE, and the
// per-output round-robin arbiter. Stepped in two halves each cycle: ingest() takes in what has
// arrived by now, forward() moves at most one wavelet onto each output link.
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "fabric/edge_port.hpp"
#include "fabric/lane.hpp"
#include "fabric/link.hpp"
#include "fabric/route.hpp"
#include "fabric/scheduler.hpp"

namespace wse {

class Router {
 public:
  std::vector<Lane> lanes;
  std::array<int8_t, MachineSpec::kMaxColours> lane_of;  // colour -> index in lanes, -1 if unrouted
  std::array<Link*, kDirs> out{};                        // toward tx targets
  std::array<Link*, kDirs> in{};                         // from rx sources (hops, ramp-up)
  std::array<IngressPort*, kMeshDirs> ingress{};
  std::array<uint8_t, kDirs> rr{};                       // lane granted last, per output
  uint8_t in_links = 0;       // directions with an incoming link (set by Mesh::build_links)
  uint8_t credit_links = 0;   // directions with an outgoing link that returns credits
  bool has_ingress = false;

  Router() { lane_of.fill(-1); }

  Lane* lane(Colour c) { return lane_of[c] < 0 ? nullptr : &lanes[size_t(lane_of[c])]; }
  const Lane* lane(Colour c) const { return lane_of[c] < 0 ? nullptr : &lanes[size_t(lane_of[c])]; }

  // Moves arrived wavelets into lanes, returned credits into lane credit counts, and lets edge
  // ingress ports feed their lanes.
  void ingest(TileId self, Cycle now, Scheduler& s);
  // Arbitrates each output and forwards; pops lane heads whose every tx copy has left. A router
  // whose lanes can only wait for credits sleeps until a credit wakes it.
  void forward(TileId self, Cycle now, Scheduler& s);
  bool holds_wavelets() const;
  // Counts the backpressure of the cycles slept through up to `end` (the end of the run).
  void settle(Cycle end) {
    catch_up(end);
    if (last_step_ != kNever && last_step_ + 1 < end) last_step_ = end - 1;  // counted up to end
  }
  void reset_step_state() {
    last_step_ = kNever, blocked_lanes_ = 0, blocked_links_ = 0;
    want_.fill(0);
  }

 private:
  // Cycles between the last step and `now` were slept through with the blocked state of the last
  // step unchanged (any credit or wavelet would have woken the router): count them.
  void catch_up(Cycle now);
  // A lane's new head wants each of its tx targets.
  void add_head(size_t i) {
    for (uint32_t m = lanes[i].tx; m; m &= m - 1) want_[size_t(std::countr_zero(m))] |= 1u << i;
  }
  void push(size_t i, uint32_t payload) {
    if (lanes[i].push(payload)) add_head(i);
  }
  bool can_send(const Lane& lane, int d, Cycle now) const {
    const Link* link = out[size_t(d)];
    return link->egress ? link->egress->can_accept(now) : lane.credits[d] > 0;
  }

  std::array<uint32_t, kDirs> want_{};  // per output: lanes whose head still has to go there

  Cycle last_step_ = kNever;
  uint32_t blocked_lanes_ = 0;  // lanes whose head waited for a credit after the last step
  uint8_t blocked_links_ = 0;   // outputs with a wavelet waiting for a credit after the last step
};

}  // namespace wse
