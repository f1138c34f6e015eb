#include "fabric/router.hpp"

namespace wse {

namespace {
// Wakes the tile at the far end of a link, or notes the cycle when that tile is another worker's.
inline void wake(Scheduler& s, const LinkQueue<Flit>& q, TileId t, Cycle c) {
  if (q.cross_thread()) s.note_remote(c);
  else s.schedule(t, c);
}
}  // namespace

void Router::ingest(TileId self, Cycle now, Scheduler& s) {
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
    if (!p) continue;
    Cycle ready = p->next_ready();
    if (ready <= now) {
      Lane& lane = lanes[size_t(lane_of[p->peek().colour])];
      if (lane.count < lane.cap) {
        lane.push(p->peek().payload);
        p->pop();
        ready = p->next_ready();
      } else {
        ready = now + 1;  // lane full: try again next cycle
      }
    }
    if (ready != kNever) s.schedule(self, std::max(ready, now + 1));
  }
}

void Router::forward(TileId self, Cycle now, Scheduler& s) {
  const size_t n = lanes.size();
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
        ++lane.counters.backpressure_cycles;
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
      wake(s, link->flits, link->dst, arrival);
    }
    ++link->counters.wavelets;
    ++link->counters.busy_cycles;
    chosen->pending &= uint8_t(~want);
  }

  bool left = false;
  for (Lane& lane : lanes) {
    if (lane.count && lane.pending == 0) {
      lane.pop();
      ++lane.counters.wavelets;
      if (Link* up = in[size_t(lane.rx)]) {  // edge ingress lanes have no upstream link
        up->credits.push({now + 1, lane.colour});
        wake(s, up->flits, up->src, now + 1);
      }
    }
    left |= lane.count != 0;
  }
  if (left) s.schedule(self, now + 1);
}

bool Router::holds_wavelets() const {
  for (const Lane& l : lanes)
    if (l.count) return true;
  return false;
}

}  // namespace wse
