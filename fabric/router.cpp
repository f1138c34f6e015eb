#include "fabric/router.hpp"

#include <bit>

#include "core/errors.hpp"

namespace wse {

void Router::count_slept(Cycle now) {
  const Cycle slept = now - last_step_ - 1;
  for (uint32_t m = blocked_lanes_; m; m &= m - 1) lanes[size_t(std::countr_zero(m))].counters.backpressure_cycles += slept;
  for (uint32_t m = blocked_links_; m; m &= m - 1) out_link(Dir(std::countr_zero(m)))->counters.backpressure_cycles += slept;
}

void Router::hold(size_t i, Dir from, uint32_t payload, uint8_t flags) {
  Lane& lane = lanes[i];
  LaneExt* e = lane.ext >= 0 ? &ext[size_t(lane.ext)] : nullptr;
  if (!e || !e->has_switch || !(e->rx_union & bit(from)))
    throw std::logic_error("router " + to_string(where) + " colour " + std::to_string(lane.colour) + ": a wavelet from " +
                           dir_name(from) + ", which no route of the colour receives from (validation missed it)");
  if (e->held_count && e->held_from != from)
    throw PeError("router " + to_string(where) + " colour " + std::to_string(lane.colour) + ": wavelets wait from both " +
                  dir_name(e->held_from) + " and " + dir_name(from) + " while the switch receives from " + dir_name(lane.rx) +
                  "; a colour can hold back one input at a time");
  if (e->held_count == LaneExt::kHeld) overflow(lane);
  e->held_from = from;
  e->held[e->held_count] = payload;
  e->held_flags[e->held_count] = flags;
  ++e->held_count;
}

void Router::overflow(const Lane& lane) const {
  throw PeError("router " + to_string(where) + " colour " + std::to_string(lane.colour) +
                ": its buffer overflowed: wavelets arrived from two inputs around a switch of its rx "
                "(the old input went on sending after the control wavelet that retired it)");
}

inline void Router::take_credits(uint32_t credit_m, Cycle now) {
  for (uint32_t m = credit_m; m; m &= m - 1) {
    const int d = std::countr_zero(m);
    OutPort& port = out_port(Dir(d));
    Link* l = port.link;
    LinkQueue<Credit>::Reader& r = port.credits;
    const Credit* const ring = r.ring;
    const uint32_t mask = r.mask, first = r.head, tail = l->credits.tail();
    LinkQueue<Credit>::check_room(r, tail);
    uint32_t head = first;
    for (; head != tail; ++head) {
      const Credit& c = ring[head & mask];
      if (c.visible > now) {
        noted_credits |= uint8_t(1u << d);
        break;
      }
      ++lanes[size_t(lane_of[c.colour])].credits[d];
    }
    if (head != first) r.head = head, sleep_ |= kWoken;
  }
}

// Each queue's tail is read once: this worker's producers are not running (and another
// worker's never push onto it: Link::cross_worker). The read
// position is kept in a local, so the calls `take` makes (a hold, a special head) do not make the
// compiler store and reload it.
template <class Take>
[[gnu::always_inline]] inline void Router::take_arrived(int d, Cycle now, Take&& take) {
  InPort& port = in_port(Dir(d));
  Link* l = port.link;
  LinkQueue<Flit>::Reader& r = port.flits;
  const Flit* const ring = r.ring;
  const uint32_t mask = r.mask, first = r.head, tail = l->flits.tail();
  LinkQueue<Flit>::check_room(r, tail);
  uint32_t head = first;
  for (; head != tail; ++head) {
    const Flit& f = ring[head & mask];
    const Cycle arrival = f.arrival;
    if (arrival > now) {
      noted_in |= uint8_t(1u << d);
      break;
    }
    take(f);
    // A link carries at most one wavelet a cycle (its arrivals strictly increase), so one that
    // arrives this very cycle is the last one visible: whatever follows arrives later, and keeps
    // the link noted without being read (a busy link's step used to read it only to find that).
    if (arrival == now) {
      if (++head != tail) noted_in |= uint8_t(1u << d);
      break;
    }
  }
  r.head = head;  // the queue's own index is published between runs (LinkQueue::publish)
}

template <int kFrom, bool kLate>
inline bool Router::hop_from(Cycle now, Scheduler& s) {
  // One link to read, holding one wavelet, which arrives now, is plain and joins (or passes
  // through) the plain lane that took the link's last one. It makes the same changes as
  // ingest_links() would, and calls nothing: with few values live and no call, it needs few
  // callee-saved registers (ingest_links() saves six, and their pushes and pops were a tenth of
  // a hop's instructions). Anything else is ingest_links()'s, from the start.
  constexpr Dir from = Dir(kFrom);
  InPort& port = in_port(from);
  LinkQueue<Flit>::Reader& r = port.flits;
  // The reader's fields are read before the tail: a read after it (an acquire) is not moved
  // before it, and was read again.
  const LinkQueue<Flit>::Reader here = r;
  const uint32_t head = here.head, tail = port.link->flits.tail();
  // One test for two cases ingest_links() takes from the start: nothing to read (tail - head - 1
  // wraps to the largest value), and more unread than the ring holds (its check_room() throws).
  if (tail - head - 1 > here.mask) return false;
  const Flit& f = here.at();
  // (The key stands for the lane's colour, rx and plainness and the wavelet's flags: InPort.)
  if (f.arrival != now || f.key() != port.hop_key) return false;
  const auto i = size_t(port.lane);
  Lane& lane = *port.lane_at;
#ifdef WSE_CHECK_INVARIANTS
  if (&lane != &lanes[i]) throw std::logic_error("router " + to_string(where) + ": an in port's lane address is stale");
#endif
  // A pass-through (see ingest_links()) here only where neither end of it needs a call:
  // the wavelet's wake and the credit's are both wake_next() (Lane::kPassHere, which implies
  // sole_out), which holds on a route inside one worker's band. Its credit goes straight back,
  // or, with kLate (ingest_late(), a step that folds in late credits), late as well
  // (Lane::kLateBack): a lane that returns credits late mostly sits in a router that takes
  // them, as a hop west or north does. (Taken in ingest_hop()'s copy too, the eastward row's hop
  // took 12 instructions more, its registers spilled; ingest_links() passes it through there.)
  // (Empty and kPassHere: one compare, Lane::pass_word(). Not empty: a push, as ingest_links()
  // would make whatever the lane's pass_here.)
  bool pass, late = false;
  const uint16_t pass_word = lane.pass_word();
  if (pass_word == Lane::kEmptyPassHere) [[likely]] {
    pass = lane.credits[lane.sole_dir()];
  } else if (kLate && pass_word == Lane::kEmptyPassLate) {
    pass = lane.credits[lane.sole_dir()];
    late = true;
  } else {
    if (lane.count == 0 && lane.sole_out && lane.credits[lane.sole_dir()]) return false;
    pass = false;
  }
  const uint32_t payload = f.payload;
  r.head = head + 1;
  // The link carries one wavelet a cycle: what follows this one arrives later, and keeps
  // the link noted (noted_credits is clear). noted_in is this link's bit alone (ingest_hop()'s
  // case), so it is that bit or nothing: it changes only when the link is left empty (one
  // branch, where writing the byte on every hop took four instructions).
  if (head + 1 == tail) noted_in = 0;
  if (!pass) {
    push_plain(lane, i, payload);
    return true;
  }
  // ingest_links()'s pass-through, with the branches tested above known. Straight across, the
  // out link is the one beside the in link, in the same line of ports (found without the lane).
  constexpr int across = int(opposite(from));
  Link* out = lane.sole_link;
  if (lane.sole_out == across + 1) [[likely]] out = out_link(Dir(across));
  send_on<true>(out, lane, i, lane.sole_dir(), payload, 0, now, s);
  ++lane.counters.wavelets;
  if (kLate && late) late_back(lane, from, port.link, now, s);
  else credit_back(lane, port.link, s);
  return true;
}

template <bool kLate>
bool Router::hop_one(uint32_t in_m, Cycle now, Scheduler& s) {
  // A case per single link: in each, the link's line of ports is at a place known from the
  // router's address alone, so its loads need not wait for the masks' (the branch is
  // predicted): one load fewer in a row on the hop's path (with the straight pass-through's
  // out link, in hop_from(), the saturated row 1.15-1.2x faster: docs/performance-history.md,
  // twenty-fifth round). The mask itself picks the case (a jump table), where a test for one
  // bit, its index and a chain of compares did.
  switch (in_m) {
    case 0: return kLate;  // no link: ingest_late()'s late credits were the whole ingest
    case bit(Dir::North): return hop_from<int(Dir::North), kLate>(now, s);
    case bit(Dir::East): return hop_from<int(Dir::East), kLate>(now, s);
    case bit(Dir::South): return hop_from<int(Dir::South), kLate>(now, s);
    case bit(Dir::West): return hop_from<int(Dir::West), kLate>(now, s);
    case bit(Dir::Ramp): return hop_from<int(Dir::Ramp), kLate>(now, s);
    default: return false;  // several links (or, with kLateNote, late credits too: ingest_hop())
  }
}

void Router::ingest_late(Cycle now, Scheduler& s) {
  // The late credits first: a pass-through below reads the credit count.
  const bool more = fold_late(now);
  const bool took = hop_one<true>(noted_in & ~kLateNote, now, s);
  // (hop_from() may have cleared the byte; ingest_links() folds again, finding nothing more.)
  noted_in = more ? uint8_t(noted_in | kLateNote) : uint8_t(noted_in & ~kLateNote);
  if (!took) ingest_links(tile, now, s);
}

void Router::ingest_hop(Cycle now, Scheduler& s) {
  const uint32_t in_m = noted_in;
  if (hop_one<false>(in_m, now, s)) return;
  if (in_m & kLateNote) return ingest_late(now, s);  // late credits to fold in first
  ingest_links(tile, now, s);
}

void Router::ingest_links(TileId self, Cycle now, Scheduler& s) {
  // Only the links that may hold something: those noted since the last step (a link keeps its
  // note while it holds what is not visible yet).
  uint32_t in_m = noted_in;
  const uint32_t credit_m = (poll_credits | noted_credits) & uint32_t(~kIngressPolled);
  noted_in = noted_credits = 0;
  if (in_m & kLateNote) {  // (before anything reads a credit count)
    in_m &= ~uint32_t(kLateNote);
    if (fold_late(now)) noted_in = kLateNote;
  }
  take_credits(credit_m, now);  // (no order between credits and wavelets: different fields)
  // The common case has no call in it, so that it keeps its state in registers: a plain wavelet
  // joining a plain lane that receives from its link. Anything else (a switch, a filter, a
  // control or .advance_switch wavelet) hands the rest of the step to ingest_from(), which
  // goes on from the same entry. (take_arrived() without its callback: each wavelet is popped
  // before it is sent on or pushed, so the reader's state is dead by then and the pass-through's
  // send has the registers to itself.)
  for (; in_m; in_m &= in_m - 1) {
    const int d = std::countr_zero(in_m);
    InPort& port = in_port(Dir(d));
    LinkQueue<Flit>::Reader& r = port.flits;
    // The tail is read once (see take_arrived()).
    const uint32_t tail = port.link->flits.tail();
    LinkQueue<Flit>::check_room(r, tail);
    for (uint32_t head = r.head; head != tail; head = r.head) {
      const Flit& f = r.at();
      const Cycle arrival = f.arrival;
      if (arrival > now) {
        noted_in |= uint8_t(1u << d);
        break;
      }
      auto i = size_t(port.lane);
      if (lanes[i].colour != f.colour) [[unlikely]] aim(port, Dir(d), i = size_t(lane_of[f.colour]));
      Lane& lane = lanes[i];
      if (lane.rx != Dir(d) || lane.ext >= 0 || f.flags) [[unlikely]] return ingest_from(in_m, self, now, s);
      const uint32_t payload = f.payload;
      r.head = head + 1;
      if (arrival == now) {
        // A link carries at most one wavelet a cycle (its arrivals strictly increase), so one
        // that arrives this very cycle is the last one visible: whatever follows arrives later
        // and keeps the link noted without being read.
        if (head + 1 != tail) noted_in |= uint8_t(1u << d);
        // A pass-through: the lane is empty and alone on its output, which it has a credit for,
        // so forward() would send this wavelet on this cycle whatever else arrives; it is sent
        // now instead, and never joins the lane. Only a wavelet that arrives this very cycle,
        // the last one taken from the link: any before it (after a pause between runs) is in
        // the lane already. (A first one would not do: forward() would send the next one, in
        // the lane, on the same output in the same cycle.)
        if (lane.count == 0 && lane.sole_out && lane.credits[lane.sole_dir()]) {
          send_on(lane.sole_link, lane, i, lane.sole_dir(), payload, 0, now, s);
          ++lane.counters.wavelets;
          return_credit(lane, Dir(d), self, now, s);
        } else {
          push_plain(lane, i, payload);
        }
        break;
      }
      push_plain(lane, i, payload);
    }
  }
  if (has_ingress) feed_from_ingress(self, now, s);
}

void Router::ingest_from(uint32_t in_m, TileId self, Cycle now, Scheduler& s) {
  for (uint32_t m = in_m; m; m &= m - 1) {
    const int d = std::countr_zero(m);
    take_arrived(d, now, [&](const Flit& f) {
      const auto i = size_t(lane_of[f.colour]);
      // A colour whose switch receives from elsewhere now keeps the wavelet waiting (its sender
      // runs out of credits): backpressure orders the senders as the switches expect.
      if (lanes[i].rx != Dir(d)) hold(i, Dir(d), f.payload, f.flags);
      else push(i, f.payload, f.flags, self, now, s);
    });
  }
  if (has_ingress) feed_from_ingress(self, now, s);
}

void Router::feed_from_ingress(TileId self, Cycle now, Scheduler& s) {
  for (int d = 0; d < kMeshDirs; ++d) {
    IngressPort* p = ingress[size_t(d)];
    if (!p || p->drained()) continue;
    if (p->next_ready() <= now) {
      const auto i = size_t(lane_of[p->peek().colour]);
      if (lanes[i].count == lanes[i].cap) continue;  // forward() wakes us when the lane pops
      if (lanes[i].rx != Dir(d)) continue;           // apply_switch() wakes us when it turns here
      push(i, p->peek().payload, p->peek().flags, self, now, s);
      p->pop(now);
    }
    if (!p->drained()) s.schedule(self, std::max(p->next_ready(), now + 1));
  }
}

void Router::special_head(size_t i, TileId self, Cycle now, Scheduler& s) {
  Lane& l = lanes[i];
  uint8_t pending = l.tx;
  if (l.front_control()) {
    // A control wavelet stops at the first router that delivers the colour to its PE.
    if (pending & bit(Dir::Ramp)) pending = bit(Dir::Ramp);
  } else if (l.ext >= 0) {
    LaneExt& e = ext[size_t(l.ext)];
    if (e.has_filter && (pending & bit(Dir::Ramp))) {
      const bool pass = e.counter <= e.filter.max_counter;
      e.counter = e.counter >= e.filter.limit1 ? 0 : e.counter + 1;
      if (!pass) pending &= uint8_t(~bit(Dir::Ramp));
    }
  }
  l.pending = pending;
  if (pending) {
    want(pending, i);
    return;
  }
  // Filtered away from its only target: the wavelet leaves the network here (finish_head takes
  // the next head, if any).
  ++l.counters.wavelets;
  finish_head(i, self, now, s);
}

void Router::apply_switch(Lane& lane, LaneExt& e, SwitchCommand cmd, TileId self, Cycle now, Scheduler& s) {
  if (!e.has_switch || cmd == SwitchCommand::Nop || cmd == SwitchCommand::Teardown) return;
  uint8_t next = e.position;
  if (cmd == SwitchCommand::Reset) {
    next = 0;
  } else if (e.position < e.sw.count) {
    next = uint8_t(e.position + 1);
  } else if (e.sw.ring_mode) {
    next = 0;
  }
  if (next == e.position) return;  // past the last position: a no-op
  e.position = next;
  ++e.advances;
  const Dir old_rx = lane.rx;
  if (next == 0) {
    lane.rx = e.base_rx, lane.tx = e.base_tx;
  } else {
    const SwitchPosition& p = e.sw.positions[next - 1];
    if (p.has_rx) lane.rx = p.rx;
    if (p.has_tx) lane.tx = p.tx;
  }
  if (lane.rx == old_rx) return;
  s.wake_next(self);  // wavelets may be waiting on the new input
  if (lane.count) {
    if (e.prev_count)
      throw PeError("router " + to_string(where) + " colour " + std::to_string(lane.colour) +
                    ": its rx switched twice while its buffer still held wavelets from the first input");
    e.prev_rx = old_rx, e.prev_count = lane.count;
  }
  if (e.held_count && e.held_from == lane.rx) {
    // What waited for this input joins the lane behind what is still there from the old one.
    const bool was_empty = lane.count == 0;
    take_held(lane, e);
    if (was_empty) add_head(size_t(&lane - lanes.data()), self, now, s);
  }
}

// As many held wavelets as the lane's ring has room for, oldest first; the rest join as the lane
// drains (finish_head). A sender's credits bound what it holds here and what it has in the lane
// each by the lane's capacity, up to 31 (router_buffer_depth 16 + latency 15), so both together
// can exceed the ring's 32 slots: they overflowed once they did, though the sender kept its
// credits (a tree reduce at depth 15 failed so).
void Router::take_held(Lane& lane, LaneExt& e) {
  const uint32_t n = std::min<uint32_t>(e.held_count, Lane::kSlots - lane.count);
  for (uint32_t k = 0; k < n; ++k) lane.push(e.held[k], e.held_flags[k]);
  for (uint32_t k = n; k < e.held_count; ++k) e.held[k - n] = e.held[k], e.held_flags[k - n] = e.held_flags[k];
  e.held_count = uint8_t(e.held_count - n);
}

void Router::finish_head(size_t i, TileId self, Cycle now, Scheduler& s) {
  Lane& lane = lanes[i];
  const bool control = lane.front_control(), advance = lane.front_advance();
  const uint32_t payload = lane.front();
  Dir from = lane.rx;
  LaneExt* e = lane.ext >= 0 ? &ext[size_t(lane.ext)] : nullptr;
  if (e && e->prev_count) from = e->prev_rx, --e->prev_count;
  bool more = lane.pop();
  return_credit(lane, from, self, now, s);
  // The switch turns first, so the next head goes where the new position sends it.
  if (e) {
    if (control) apply_switch(lane, *e, control_command(payload), self, now, s);
    if (advance) apply_switch(lane, *e, SwitchCommand::Advance, self, now, s);
    // Held wavelets of the input now taken that did not fit the ring when it turned.
    if (e->held_count && e->held_from == lane.rx && lane.count < Lane::kSlots) {
      const bool was_empty = lane.count == 0;
      take_held(lane, *e);
      if (was_empty && !more) more = true;
    }
  }
  if (more) add_head(i, self, now, s);
}

void Router::forward(TileId self, Cycle now, Scheduler& s) {
  last_step_ = now;  // (begin_step() sets it only for a router that was blocked)
  // The common case first: one output wanted, by one plain lane whose head goes there alone and
  // has a credit (a hop of a unicast route). It makes the same changes as the general loop below
  // would, without its masks; the next head of the same route keeps the output's want bit.
  if (!(wanted_ & (wanted_ - 1))) {
    const int d = std::countr_zero(uint32_t(wanted_));
    const uint32_t cand = want_[size_t(d)];
    const uint8_t out = uint8_t(1u << d);
    if (!(cand & (cand - 1)) && (credit_links & out)) {
      const auto i = size_t(std::countr_zero(cand));
      Lane& lane = lanes[i];
      if (lane.ext < 0 && lane.credits[d] && lane.pending == out && !lane.front_control()) {
        send(lane, i, d, lane.front(), 0, now, s);
        ++lane.counters.wavelets;
        const bool more = lane.pop();
        return_credit(lane, lane.rx, self, now, s);
        if (more && lane.tx == out && !lane.front_control()) {
          lane.pending = out;  // want_[d] and wanted_ stay as they are
          if (lane.credits[d]) {
            blocked_lanes_ = 0, blocked_links_ = 0, sleep_ = 0;
            return s.wake_next(self);
          }
          blocked_lanes_ = cand, blocked_links_ = out, sleep_ = kAsleep;
          return;
        }
        want_[size_t(d)] = 0, wanted_ = 0, lane.pending = 0;
        if (more) return next_head(i, self, now, s);
        blocked_lanes_ = 0, blocked_links_ = 0, sleep_ = 0;
        return;
      }
    }
  }
  forward_general(self, now, s);
}

void Router::next_head(size_t i, TileId self, Cycle now, Scheduler& s) {
  add_head(i, self, now, s);
  sleep_or_wake(self, now, s);  // (which clears the kWoken add_head() set, as after the general loop)
}

void Router::forward_general(TileId self, Cycle now, Scheduler& s) {
  // One plain lane wants every wanted output, each a link that returns credits (a multicast head,
  // the FC step's broadcasts, often waiting for one of its outputs): no arbitration. It makes
  // the same changes as the loop below would.
  uint32_t lanes_m = 0;
  for (uint32_t outs = wanted_; outs; outs &= outs - 1) lanes_m |= want_[size_t(std::countr_zero(outs))];
  if (!(lanes_m & (lanes_m - 1)) && (credit_links & wanted_) == wanted_) {
    const auto i = size_t(std::countr_zero(lanes_m));
    Lane& lane = lanes[i];
    if (lane.ext < 0 && !lane.front_control()) return forward_one_lane(lane, i, self, now, s);
  }
  uint32_t waited = 0;    // lanes whose head found no credit on some output this cycle
  uint32_t finished = 0;  // lanes whose head has reached every tx target
  for (uint32_t outs = wanted_; outs; outs &= outs - 1) {
    const int d = std::countr_zero(outs);
    const uint32_t cand = want_[size_t(d)];
    Link* link = out_link(Dir(d));
    // The lanes that can send: a credit toward d each, or (an egress port) the port's next slot.
    // (An out link without credits is an egress link, on a mesh side.)
    EgressPort* const port = credit_links & (1u << d) ? nullptr : egress[size_t(d)];
    const uint32_t ok = port ? (port->can_accept(now) ? cand : 0) : with_credit(cand, d);
    waited |= cand & ~ok;
    if (!ok) {
      ++link->counters.backpressure_cycles;
      continue;
    }
    // Round-robin: the first lane after the one granted last, else the first.
    const uint32_t after = ok & ~((2u << rr[size_t(d)]) - 1u);
    const int chosen = std::countr_zero(after ? after : ok);
    Lane& lane = lanes[size_t(chosen)];
    // The control bit travels on; .advance_switch is this router's business only.
    const uint8_t flags = lane.front_control() ? kControl : 0;
    if (port) {
      rr[size_t(d)] = uint8_t(chosen);
      link->counters.extra_hold_cycles += port->accept(now, now + link->latency, Wavelet{lane.front(), lane.colour, flags});
      ++link->counters.wavelets;
    } else {
      send(lane, size_t(chosen), d, lane.front(), flags, now, s);
    }
    if (!(want_[size_t(d)] &= ~(1u << chosen))) wanted_ &= uint8_t(~(1u << d));
    lane.pending &= uint8_t(~bit(Dir(d)));
    if (!lane.pending) finished |= 1u << chosen;
  }
  for (uint32_t m = waited; m; m &= m - 1) ++lanes[size_t(std::countr_zero(m))].counters.backpressure_cycles;

  // Pop finished heads and return their credits upstream (or let an edge ingress port refill).
  for (uint32_t m = finished; m; m &= m - 1) {
    const auto i = size_t(std::countr_zero(m));
    Lane& lane = lanes[i];
    ++lane.counters.wavelets;
    if (lane.ext >= 0 || lane.front_control()) {
      finish_head(i, self, now, s);
      continue;
    }
    // A plain lane (the hot path): pop, return the credit, take the next head.
    const bool more = lane.pop();
    return_credit(lane, lane.rx, self, now, s);
    if (more) add_head(i, self, now, s);  // (its kWoken is cleared by sleep_or_wake() below)
  }

  sleep_or_wake(self, now, s);
}

void Router::forward_one_lane(Lane& lane, size_t i, TileId self, Cycle now, Scheduler& s) {
  // (The lane's pending targets are the wanted outputs: it is the only lane that wants any.)
  uint8_t waiting = 0;  // outputs without a credit this cycle
  for (uint32_t outs = wanted_; outs; outs &= outs - 1) {
    const int d = std::countr_zero(outs);
    if (lane.credits[d]) {
      send(lane, i, d, lane.front(), 0, now, s);
      want_[size_t(d)] = 0;
    } else {
      ++out_link(Dir(d))->counters.backpressure_cycles;
      waiting |= uint8_t(1u << d);
    }
  }
  wanted_ = waiting, lane.pending = waiting;
  if (waiting) {
    // The head waits for credits toward the outputs left, all of which it has just found
    // without one: what sleep_or_wake() would find.
    ++lane.counters.backpressure_cycles;
    blocked_lanes_ = 1u << i, blocked_links_ = waiting, sleep_ = kAsleep;
    return;
  }
  ++lane.counters.wavelets;
  const bool more = lane.pop();
  return_credit(lane, lane.rx, self, now, s);
  if (more) add_head(i, self, now, s);
  sleep_or_wake(self, now, s);
}

void Router::sleep_or_wake(TileId self, Cycle now, Scheduler& s) {
  // Step again next cycle only if some head can move then; otherwise sleep until a credit
  // returns (its sender wakes us) or a rate-limited egress port has its next slot.
  blocked_lanes_ = 0;
  blocked_links_ = 0;
  sleep_ = 0;
  if (!wanted_) return;
  Cycle egress_slot = kNever;
  for (uint32_t outs = wanted_; outs; outs &= outs - 1) {
    const int d = std::countr_zero(outs);
    const uint32_t cand = want_[size_t(d)];
    if (credit_links & (1u << d)) {
      if (with_credit(cand, d)) return s.wake_next(self);
    } else {
      const Cycle slot = egress[size_t(d)]->next_slot();
      if (slot <= now + 1) return s.wake_next(self);
      egress_slot = std::min(egress_slot, slot);
    }
    blocked_lanes_ |= cand;
    blocked_links_ |= uint8_t(1u << d);
  }
  if (egress_slot != kNever) s.schedule(self, egress_slot);
  else sleep_ = kAsleep;  // only a credit (or a new head) can wake this router
}

std::vector<std::string> Router::waiting_on(Cycle end) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Lane& l = lanes[i];
    const LaneExt* e = l.ext >= 0 ? &ext[size_t(l.ext)] : nullptr;
    if (!l.count && !(e && e->held_count)) continue;  // (every run's end asks: strings only for what is held)
    const std::string at = "router " + to_string(where) + " colour " + std::to_string(l.colour);
    if (l.count) {
      std::string targets;
      for (int d = 0; d < kDirs; ++d)
        if (l.pending & bit(Dir(d))) targets += std::string(targets.empty() ? "" : ", ") + dir_name(Dir(d));
      out.push_back(at + " holds " + std::to_string(l.count) + " wavelet(s); the first waits for a credit toward " +
                    (targets.empty() ? std::string("nothing") : targets));
    }
    if (e && e->held_count)
      out.push_back(at + " holds " + std::to_string(e->held_count) + " wavelet(s) from " + dir_name(e->held_from) +
                    ", waiting for its switch (at position " + std::to_string(e->position) + ", receiving from " + dir_name(l.rx) +
                    ") to turn to that input");
  }
  for (int d = 0; d < kMeshDirs; ++d) {
    const IngressPort* p = ingress[size_t(d)];
    if (!p || p->drained()) continue;
    // A port whose next wavelet was not due before the run stopped is paced, not blocked: a tiny
    // io_bytes_per_cycle was put down to a full lane. (Due at `end` itself: never tried, paced.)
    const Cycle next = p->next_ready();
    const std::string why = next >= end ? "the next may enter at cycle " + std::to_string(next) +
                                             ": the port is paced by its share of machine.io_bytes_per_cycle, or by its stream's arrival from off the wafer"
                                       : "colour " + std::to_string(p->peek().colour) + "'s lane is full or switched away";
    out.push_back("ingress port at " + to_string(where) + " side " + dir_name(Dir(d)) + ": " + std::to_string(p->size() - p->sent()) +
                  " of " + std::to_string(p->size()) + " wavelets not taken (" + why + ")");
  }
  return out;
}

void Router::reset_switches() {
  for (Lane& l : lanes) {
    if (l.ext < 0) continue;
    LaneExt& e = ext[size_t(l.ext)];
    e.position = 0, e.prev_count = 0, e.held_count = 0;
    l.rx = e.base_rx, l.tx = e.base_tx;
    e.counter = e.has_filter ? e.filter.init_counter : 0;
  }
}

}  // namespace wse
