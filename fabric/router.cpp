#include "fabric/router.hpp"

#include <bit>

namespace wse {

void Router::catch_up(Cycle now) {
  if (last_step_ == kNever || now <= last_step_ + 1 || !(blocked_lanes_ | blocked_links_)) return;
  const Cycle slept = now - last_step_ - 1;
  for (uint32_t m = blocked_lanes_; m; m &= m - 1) lanes[size_t(std::countr_zero(m))].counters.backpressure_cycles += slept;
  for (int d = 0; d < kDirs; ++d)
    if (blocked_links_ & bit(Dir(d))) out[size_t(d)]->counters.backpressure_cycles += slept;
}

void Router::ingest(TileId self, Cycle now, Scheduler& s) {
  catch_up(now);
  last_step_ = now;
  for (int d = 0; d < kDirs; ++d) {
    if (Link* l = in[size_t(d)]) {
      while (const Flit* f = l->flits.front()) {
        if (f->arrival > now) break;
        lanes[size_t(lane_of[f->colour])].push(f->payload);
        l->flits.pop();
      }
    }
    if (Link* l = out[size_t(d)]; l && !l->egress) {
      while (const Credit* c = l->credits.front()) {
        if (c->visible > now) break;
        ++lanes[size_t(lane_of[c->colour])].credits[d];
        l->credits.pop();
      }
    }
  }
  for (int d = 0; d < kMeshDirs; ++d) {
    IngressPort* p = ingress[size_t(d)];
    if (!p || p->drained()) continue;
    if (p->next_ready() <= now) {
      Lane& lane = lanes[size_t(lane_of[p->peek().colour])];
      if (lane.count == lane.cap) continue;  // forward() wakes us when the lane pops
      lane.push(p->peek().payload);
      p->pop(now);
    }
    if (!p->drained()) s.schedule(self, std::max(p->next_ready(), now + 1));
  }
}

void Router::forward(TileId self, Cycle now, Scheduler& s) {
  const size_t n = lanes.size();
  uint32_t waited = 0;  // lanes whose head found no credit this cycle
  for (int d = 0; d < kDirs; ++d) {
    Link* link = out[size_t(d)];
    if (!link) continue;
    const uint8_t want = bit(Dir(d));
    Lane* chosen = nullptr;
    size_t chosen_i = 0;
    bool blocked = false;
    for (size_t k = 1; k <= n; ++k) {
      size_t i = (rr[size_t(d)] + k) % n;
      Lane& lane = lanes[i];
      if (!lane.count || !(lane.pending & want)) continue;
      bool credit = link->egress ? link->egress->can_accept(now) : lane.credits[d] > 0;
      if (!credit) {
        blocked = true;
        waited |= 1u << i;
        continue;
      }
      if (!chosen) chosen = &lane, chosen_i = i;
    }
    if (!chosen) {
      if (blocked) ++link->counters.backpressure_cycles;
      continue;
    }
    rr[size_t(d)] = uint8_t(chosen_i);
    const Cycle arrival = now + link->latency;
    if (link->egress) {
      link->egress->accept(arrival, {chosen->front(), chosen->colour});
    } else {
      link->flits.push({arrival, chosen->front(), chosen->colour});
      --chosen->credits[d];
      s.schedule(link->dst, arrival);
    }
    ++link->counters.wavelets;
    ++link->counters.busy_cycles;
    chosen->pending &= uint8_t(~want);
  }
  for (uint32_t m = waited; m; m &= m - 1) ++lanes[size_t(std::countr_zero(m))].counters.backpressure_cycles;

  // Pop finished heads and return their credits upstream (or let an edge ingress port refill).
  for (Lane& lane : lanes) {
    if (!lane.count || lane.pending) continue;
    lane.pop();
    ++lane.counters.wavelets;
    if (Link* up = in[size_t(lane.rx)]) {
      up->credits.push({now + 1, lane.colour});
      s.schedule(up->src, now + 1);
    } else {
      s.schedule(self, now + 1);  // the ingress port feeding this lane may push again
    }
  }

  // Step again next cycle only if some head can move then; otherwise sleep until a credit
  // returns (its sender wakes us) or a rate-limited egress port has its next slot.
  blocked_lanes_ = 0;
  blocked_links_ = 0;
  bool movable = false;
  Cycle egress_slot = kNever;
  for (size_t i = 0; i < n; ++i) {
    const Lane& lane = lanes[i];
    if (!lane.count) continue;
    for (uint32_t m = lane.pending; m; m &= m - 1) {
      const int d = std::countr_zero(m);
      const Link* link = out[size_t(d)];
      if (link->egress) {
        Cycle slot = link->egress->next_slot();
        if (slot <= now + 1) {
          movable = true;
          continue;
        }
        egress_slot = std::min(egress_slot, slot);
      } else if (lane.credits[d] > 0) {
        movable = true;
        continue;
      }
      blocked_lanes_ |= 1u << i;
      blocked_links_ |= uint8_t(1u << d);
    }
  }
  if (movable) s.schedule(self, now + 1);
  else if (egress_slot != kNever) s.schedule(self, egress_slot);
}

bool Router::holds_wavelets() const {
  for (const Lane& l : lanes)
    if (l.count) return true;
  return false;
}

}  // namespace wse
