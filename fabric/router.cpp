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
  for (uint32_t m = in_links; m; m &= m - 1) {
    Link* l = in[size_t(std::countr_zero(m))];
    while (const Flit* f = l->flits.front()) {
      if (f->arrival > now) break;
      push(size_t(lane_of[f->colour]), f->payload);
      l->flits.pop();
    }
  }
  for (uint32_t m = credit_links; m; m &= m - 1) {
    const int d = std::countr_zero(m);
    Link* l = out[size_t(d)];
    while (const Credit* c = l->credits.front()) {
      if (c->visible > now) break;
      ++lanes[size_t(lane_of[c->colour])].credits[d];
      l->credits.pop();
    }
  }
  if (!has_ingress) return;
  for (int d = 0; d < kMeshDirs; ++d) {
    IngressPort* p = ingress[size_t(d)];
    if (!p || p->drained()) continue;
    if (p->next_ready() <= now) {
      const auto i = size_t(lane_of[p->peek().colour]);
      if (lanes[i].count == lanes[i].cap) continue;  // forward() wakes us when the lane pops
      push(i, p->peek().payload);
      p->pop(now);
    }
    if (!p->drained()) s.schedule(self, std::max(p->next_ready(), now + 1));
  }
}

void Router::forward(TileId self, Cycle now, Scheduler& s) {
  uint32_t waited = 0;    // lanes whose head found no credit on some output this cycle
  uint32_t finished = 0;  // lanes whose head has reached every tx target
  for (int d = 0; d < kDirs; ++d) {
    const uint32_t cand = want_[size_t(d)];
    if (!cand) continue;
    Link* link = out[size_t(d)];
    // Round-robin: lanes after the one granted last, then the rest.
    const uint32_t after = cand & ~((2u << rr[size_t(d)]) - 1u);
    int chosen = -1;
    bool blocked = false;
    for (uint32_t part : {after, cand & ~after}) {
      for (uint32_t m = part; m; m &= m - 1) {
        const int i = std::countr_zero(m);
        if (!can_send(lanes[size_t(i)], d, now)) {
          blocked = true;
          waited |= 1u << i;
        } else if (chosen < 0) {
          chosen = i;
        }
      }
    }
    if (chosen < 0) {
      if (blocked) ++link->counters.backpressure_cycles;
      continue;
    }
    Lane& lane = lanes[size_t(chosen)];
    rr[size_t(d)] = uint8_t(chosen);
    const Cycle arrival = now + link->latency;
    if (link->egress) {
      link->egress->accept(arrival, {lane.front(), lane.colour});
    } else {
      link->flits.push({arrival, lane.front(), lane.colour});
      --lane.credits[d];
      s.schedule(link->dst, arrival);
    }
    ++link->counters.wavelets;
    ++link->counters.busy_cycles;
    want_[size_t(d)] &= ~(1u << chosen);
    lane.pending &= uint8_t(~bit(Dir(d)));
    if (!lane.pending) finished |= 1u << chosen;
  }
  for (uint32_t m = waited; m; m &= m - 1) ++lanes[size_t(std::countr_zero(m))].counters.backpressure_cycles;

  // Pop finished heads and return their credits upstream (or let an edge ingress port refill).
  for (uint32_t m = finished; m; m &= m - 1) {
    const auto i = size_t(std::countr_zero(m));
    Lane& lane = lanes[i];
    if (lane.pop()) add_head(i);
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
  for (int d = 0; d < kDirs && !movable; ++d) {
    for (uint32_t m = want_[size_t(d)]; m; m &= m - 1) {
      const int i = std::countr_zero(m);
      const Link* link = out[size_t(d)];
      if (link->egress) {
        const Cycle slot = link->egress->next_slot();
        if (slot <= now + 1) {
          movable = true;
          break;
        }
        egress_slot = std::min(egress_slot, slot);
      } else if (lanes[size_t(i)].credits[d] > 0) {
        movable = true;
        break;
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
