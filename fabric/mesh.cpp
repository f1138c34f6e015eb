#include "fabric/mesh.hpp"

#include <algorithm>
#include <array>
#include <bit>

#include "core/errors.hpp"

namespace wse {

Mesh::Mesh(const MachineSpec& spec, MeshShape shape) : spec_(spec), shape_(shape), routers_(shape.tiles(), nullptr) {}

Router* Mesh::new_router() {
  if (router_blocks_.empty() || next_in_block_ == block_size_) {
    // A tile has one router at most, so the mesh never needs more than its tiles.
    block_size_ = std::min<size_t>(kRouterBlock, shape_.tiles() - routers_made_);
    router_blocks_.push_back(std::make_unique<Router[]>(block_size_));
    next_in_block_ = 0;
  }
  ++routers_made_;
  Router* r = &router_blocks_.back()[next_in_block_++];
  r->lanes = LaneVector(LanePool::Allocator<Lane>(lane_pool_.get()));
  return r;
}

std::string Mesh::where(Coord c, Colour colour) const {
  return "route at tile " + to_string(c) + " colour " + std::to_string(colour);
}

void Mesh::set_route(Coord tile, Colour colour, Route route) {
  if (!shape_.contains(tile.x, tile.y))
    throw RouteError("route at tile " + to_string(tile) + " is off the " + std::to_string(shape_.width) + "x" +
                     std::to_string(shape_.height) + " mesh");
  if (colour >= spec_.colours)
    // Kernels choose their colours; what a user can change is the preset's count (machine.colours).
    throw RouteError(where(tile, colour) + ": colour is beyond the " + std::to_string(spec_.colours) +
                     " routable colours of " + spec_.name + " (field 'machine.colours' is " +
                     std::to_string(spec_.colours) + "; this route needs at least " + std::to_string(colour + 1) + ")");
  if (uint8_t(route.rx) >= kDirs || route.tx >= (1u << kDirs))
    throw RouteError(where(tile, colour) + ": rx or tx names a port that does not exist");
  if (route.tx == 0) throw RouteError(where(tile, colour) + ": empty tx set");
  Router*& r = routers_[shape_.id(tile)];
  if (!r) r = new_router(), r->where = tile, r->tile = shape_.id(tile);
  if (Lane* lane = r->lane(colour)) {
    if (lane->rx != route.rx)
      throw RouteError(where(tile, colour) + ": already receives from " + dir_name(lane->rx) + ", cannot also receive from " +
                       dir_name(route.rx) + " (one rx direction per colour per router; use switch positions to change it at run time)");
    if (links_ && (route.tx & ~r->tx_union(*lane))) note_stale(where(tile, colour) + ": a route's tx set grew");
    lane->tx |= route.tx;
    if (LaneExt* e = r->lane_ext(colour)) e->base_tx = lane->tx, e->tx_union |= route.tx;
    return;
  }
  if (links_) note_stale(where(tile, colour) + ": a new route");
  Lane lane;
  lane.colour = colour;
  lane.rx = route.rx;
  lane.tx = route.tx;
  r->lane_of[colour] = int8_t(r->lanes.size());
  r->lanes.reserve(r->lanes.size() + 1);  // one lane at a time: the array let go is the next router's (LanePool)
  r->lanes.push_back(lane);
}

void Mesh::set_switch(Coord tile, Colour colour, const ColourSwitchConfig& cfg) {
  Router* r = shape_.contains(tile.x, tile.y) ? routers_[shape_.id(tile)] : nullptr;
  Lane* lane = r ? r->lane(colour) : nullptr;
  if (!lane) throw RouteError(where(tile, colour) + ": switch positions need the colour's route (position 0) first");
  if (cfg.count == 0) throw RouteError(where(tile, colour) + ": a switch needs at least one position beyond the route");
  if (1u + cfg.count > spec_.switch_positions)
    throw RouteError(where(tile, colour) + ": " + std::to_string(1 + cfg.count) + " switch positions (the route and " +
                     std::to_string(cfg.count) + " more), but a " + spec_.name + " router holds at most " +
                     std::to_string(spec_.switch_positions) + " per colour (machine.switch_positions)");
  const uint8_t rx_before = r->rx_union(*lane), tx_before = r->tx_union(*lane);
  LaneExt& e = r->make_ext(*lane);
  const LanesChanged refresh{*this, *r};  // (also when a position below is refused)
  e.has_switch = true;
  e.sw = cfg;
  e.rx_union = bit(e.base_rx), e.tx_union = e.base_tx;
  for (uint8_t k = 0; k < cfg.count; ++k) {
    const SwitchPosition& p = cfg.positions[k];
    const std::string pos = where(tile, colour) + ": switch position " + std::to_string(k + 1);
    if (!p.has_rx && !p.has_tx) throw RouteError(pos + " names neither an rx nor a tx");
    if (p.has_rx && p.has_tx && !spec_.switch_rx_and_tx)
      throw RouteError(pos + " names both an rx and a tx; a " + spec_.name +
                       " switch position changes one side only (put the change in two positions)");
    if (p.has_rx && uint8_t(p.rx) >= kDirs) throw RouteError(pos + ": rx names a port that does not exist");
    if (p.has_tx && (p.tx == 0 || p.tx >= (1u << kDirs))) throw RouteError(pos + ": empty tx set or a port that does not exist");
    if (p.has_rx) e.rx_union |= bit(p.rx);
    if (p.has_tx) e.tx_union |= p.tx;
  }
  if (links_ && ((e.rx_union & ~rx_before) || (e.tx_union & ~tx_before)))
    note_stale(where(tile, colour) + ": switch positions that reach a port the route did not");
}

void Mesh::set_filter(Coord tile, Colour colour, const CounterFilter& f) {
  Router* r = shape_.contains(tile.x, tile.y) ? routers_[shape_.id(tile)] : nullptr;
  Lane* lane = r ? r->lane(colour) : nullptr;
  if (!lane) throw RouteError(where(tile, colour) + ": a filter needs the colour's route first");
  uint32_t filters = 0;
  for (const LaneExt& e : r->ext) filters += e.has_filter;
  LaneExt& e = r->make_ext(*lane);
  const LanesChanged refresh{*this, *r};  // (also when the filter is refused below)
  if (!e.has_switch) e.rx_union = bit(e.base_rx), e.tx_union = e.base_tx;
  if (!e.has_filter && filters >= spec_.pe_filters)
    throw RouteError(where(tile, colour) + ": counter filter number " + std::to_string(filters + 1) + " at this router, but a " +
                     spec_.name + " PE has " + std::to_string(spec_.pe_filters) + " (machine.pe_filters)");
  // The counter never exceeds limit1, so max_counter >= limit1 passes every wavelet.
  if (f.max_counter >= f.limit1)
    throw RouteError(where(tile, colour) + ": the filter passes every wavelet (max_counter " + std::to_string(f.max_counter) +
                     " >= limit1 " + std::to_string(f.limit1) + "): leave it out");
  if (f.init_counter > f.limit1) throw RouteError(where(tile, colour) + ": filter init_counter is beyond limit1");
  e.has_filter = true;
  e.filter = f;
  e.counter = f.init_counter;
}

void Mesh::clear_filter(Coord tile, Colour colour) {
  Router* r = shape_.contains(tile.x, tile.y) ? routers_[shape_.id(tile)] : nullptr;
  if (LaneExt* e = r ? r->lane_ext(colour) : nullptr) e->has_filter = false, e->counter = 0;
}

void Mesh::reset_switches() {
  for (auto& r : routers_)
    if (r) r->reset_switches();
}

void Mesh::publish_reads() {
  for (auto& r : routers_)
    if (r) r->publish_reads();
}

IngressPort& Mesh::add_ingress(Coord tile, Dir side) {
  Coord n;
  if (side == Dir::Ramp || !shape_.contains(tile.x, tile.y) || shape_.neighbour(tile, side, n))
    throw RouteError("ingress port at tile " + to_string(tile) + " side " + dir_name(side) + " is not on the mesh edge");
  return ingress_.emplace_back(tile, side);
}

EgressPort& Mesh::add_egress(Coord tile, Dir side) {
  Coord n;
  if (side == Dir::Ramp || !shape_.contains(tile.x, tile.y) || shape_.neighbour(tile, side, n))
    throw RouteError("egress port at tile " + to_string(tile) + " side " + dir_name(side) + " is not on the mesh edge");
  return egress_.emplace_back(tile, side);
}

void Mesh::validate() const {
  if (spec_.wavelets_per_link_per_cycle != 1)
    throw UsageError("machine spec: wavelets_per_link_per_cycle must be 1 (the only rate modelled)");
  auto has_port = [](const auto& ports, Coord t, Dir side) {
    for (const auto& p : ports)
      if (p.tile() == t && p.side() == side) return true;
    return false;
  };
  for (TileId t = 0; t < routers_.size(); ++t) {
    const Router* r = routers_[t];
    if (!r) continue;
    const Coord c = shape_.coord(t);
    for (const Lane& lane : r->lanes) {
      Coord n;
      const uint8_t rxs = r->rx_union(lane), txs = r->tx_union(lane);
      for (int d = 0; d < kMeshDirs; ++d)
        if ((rxs & bit(Dir(d))) && !shape_.neighbour(c, Dir(d), n) && !has_port(ingress_, c, Dir(d)))
          throw RouteError(where(c, lane.colour) + ": receives from " + dir_name(Dir(d)) +
                           " off the mesh edge, where no ingress port is attached");
      for (int d = 0; d < kMeshDirs; ++d) {
        if (!(txs & bit(Dir(d)))) continue;
        if (!shape_.neighbour(c, Dir(d), n)) {
          if (!has_port(egress_, c, Dir(d)))
            throw RouteError(where(c, lane.colour) + ": sends " + dir_name(Dir(d)) +
                             " off the mesh edge, where no egress port is attached");
          continue;
        }
        const Router* nr = routers_[shape_.id(n)];
        const Lane* nl = nr ? nr->lane(lane.colour) : nullptr;
        if (!nl)
          throw RouteError(where(c, lane.colour) + ": sends " + dir_name(Dir(d)) + " to tile " + to_string(n) +
                           ", which has no route for colour " + std::to_string(lane.colour));
        if (!(nr->rx_union(*nl) & bit(opposite(Dir(d)))))
          throw RouteError(where(c, lane.colour) + ": sends " + dir_name(Dir(d)) + " to tile " + to_string(n) +
                           ", which receives colour " + std::to_string(lane.colour) + " from " + dir_name(nl->rx) +
                           ", not " + dir_name(opposite(Dir(d))));
      }
    }
  }
}

void Mesh::note_stale(const std::string& what) {
  if (stale_.empty()) stale_ = what;
}

void Mesh::build_links(const Partition& partition) {
  links_.reset(), link_count_ = 0, rings_.reset();
  stale_.clear();
  dense_ = routers_.empty() ? nullptr : routers_[0];
  for (TileId t = 0; t < routers_.size() && dense_; ++t)
    if (routers_[t] != dense_ + t) dense_ = nullptr;
  const uint32_t hop = spec_.hop_latency_cycles, ramp = spec_.ramp_latency_cycles;
  for (TileId t = 0; t < routers_.size(); ++t) {
    Router* r = routers_[t];
    if (!r) continue;
    r->clear_ports();
    r->ingress.fill(nullptr);
    r->egress.fill(nullptr);
    r->rr.fill(0);
    r->reset_step_state();
    r->in_links = r->credit_links = 0;
    r->has_ingress = false;
    const Coord c = shape_.coord(t);
    for (Lane& lane : r->lanes) {
      Coord n;
      lane.head = lane.count = lane.pending = 0;
      lane.counters = {};
      lane.control = lane.advance = 0;
      // A lane that switches its rx is sized for the longest input it may have.
      const uint8_t rxs = r->rx_union(lane);
      uint32_t cap = 0;
      for (int d = 0; d < kDirs; ++d) {
        if (!(rxs & bit(Dir(d)))) continue;
        if (Dir(d) == Dir::Ramp) cap = std::max(cap, lane_capacity(ramp));
        else if (shape_.neighbour(c, Dir(d), n)) cap = std::max(cap, lane_capacity(hop));
        else cap = std::max(cap, lane_capacity(0));
      }
      lane.cap = uint8_t(cap);
      lane.ring = lane.ext >= 0 ? uint8_t(Lane::kSlots) : uint8_t(cap);
    }
    r->reset_switches();
  }
  // Credits toward each tx target: the downstream lane's capacity (known now for every lane).
  for (TileId t = 0; t < routers_.size(); ++t) {
    Router* r = routers_[t];
    if (!r) continue;
    const Coord c = shape_.coord(t);
    for (Lane& lane : r->lanes) {
      Coord n;
      const uint8_t txs = r->tx_union(lane);
      for (int d = 0; d < kDirs; ++d) {
        lane.credits[d] = 0;
        if (!(txs & bit(Dir(d)))) continue;
        if (Dir(d) == Dir::Ramp) lane.credits[d] = uint8_t(pe_queue_capacity());
        else if (shape_.neighbour(c, Dir(d), n)) lane.credits[d] = routers_[shape_.id(n)]->lane(lane.colour)->cap;
      }
    }
  }
  // One link per (tile, tx direction) in use, shared by every colour routed that way, and one
  // per PE that sends: counted first, so that they are one array in tile order (routers and PEs
  // keep pointers to them). Each queue's ring is sized here and placed below.
  auto used = [&](const Router& r) {
    uint8_t tx = 0, rx = 0;
    for (const Lane& lane : r.lanes) tx |= r.tx_union(lane), rx |= r.rx_union(lane);
    return std::pair{tx, rx};
  };
  for (const auto& r : routers_)
    if (r) {
      const auto [tx, rx] = used(*r);
      link_count_ += size_t(std::popcount(unsigned(tx))) + ((rx & bit(Dir::Ramp)) != 0);
    }
  links_ = std::make_unique<Link[]>(link_count_);
  std::vector<std::pair<uint32_t, uint32_t>> ring_sizes(link_count_, {0, 0});  // wavelets, credits (0: none)
  size_t next = 0;
  for (TileId t = 0; t < routers_.size(); ++t) {
    Router* r = routers_[t];
    if (!r) continue;
    const Coord c = shape_.coord(t);
    const auto [used_tx, used_rx] = used(*r);
    uint32_t colours_tx[kDirs] = {};
    for (const Lane& lane : r->lanes)
      for (uint32_t m = r->tx_union(lane); m; m &= m - 1) ++colours_tx[std::countr_zero(m)];
    for (int d = 0; d < kDirs; ++d) {
      if (!(used_tx & bit(Dir(d)))) continue;
      auto& [flit_ring, credit_ring] = ring_sizes[next];
      Link& l = links_[next];
      l.index = uint32_t(next++);
      l.src = t;
      l.dir = Dir(d);
      Coord n;
      uint32_t downstream_cap;
      if (Dir(d) == Dir::Ramp) {
        l.kind = LinkKind::RampDown, l.dst = t, l.latency = uint8_t(ramp);
        downstream_cap = pe_queue_capacity();
      } else if (shape_.neighbour(c, Dir(d), n)) {
        l.kind = LinkKind::Hop, l.dst = shape_.id(n), l.latency = uint8_t(hop);
        downstream_cap = 0;
        for (const Lane& lane : routers_[l.dst]->lanes) downstream_cap = std::max<uint32_t>(downstream_cap, lane.cap);
        routers_[l.dst]->in_port(opposite(Dir(d))).link = &l;
      } else {
        l.kind = LinkKind::Egress, l.dst = t, l.latency = uint8_t(hop);
        for (EgressPort& p : egress_)
          if (p.tile() == c && p.side() == Dir(d)) r->egress[size_t(d)] = &p;
        downstream_cap = 0;
      }
      l.dst_place = Scheduler::place_of(l.dst);
      if (l.kind != LinkKind::Egress) {
        // A switching colour at the far end may hold wavelets on the link until its rx turns.
        bool holds = false;
        for (const Lane& lane : routers_[l.dst]->lanes) holds |= lane.ext >= 0 && routers_[l.dst]->ext[size_t(lane.ext)].has_switch;
        flit_ring = l.latency + 2 + (holds ? colours_tx[d] * downstream_cap : 0);
        credit_ring = colours_tx[d] * downstream_cap + 1;
      }
      r->out_port(Dir(d)).link = &l;
    }
    if (used_rx & bit(Dir::Ramp)) {  // the PE sends onto this router
      auto& [flit_ring, credit_ring] = ring_sizes[next];
      Link& l = links_[next];
      l.index = uint32_t(next++);
      l.kind = LinkKind::RampUp, l.src = l.dst = t, l.dir = Dir::Ramp, l.latency = uint8_t(ramp);
      l.dst_place = Scheduler::place_of(t);
      uint32_t credits = 1;
      for (const Lane& lane : r->lanes)
        if (r->rx_union(lane) & bit(Dir::Ramp)) credits += lane.cap;
      flit_ring = ramp + 2 + credits;  // room for what a switching colour holds back
      credit_ring = credits;
      r->in_port(Dir::Ramp).link = &l;
    }
  }
  // The rings, in one block: every link's wavelet ring in tile order, then every credit ring (a
  // hop inside a band returns its credits straight into the sender's lane, Lane::credit_back,
  // so most credit rings stay cold and out of the hot rings' lines).
  size_t lines = 0;
  for (const auto& [f, c] : ring_sizes)
    lines += (f ? LinkQueue<Flit>::ring_bytes(f) : 0) / sizeof(RingLine) + (c ? LinkQueue<Credit>::ring_bytes(c) : 0) / sizeof(RingLine);
  rings_ = std::make_unique_for_overwrite<RingLine[]>(lines);
  RingLine* at = rings_.get();
  for (size_t i = 0; i < link_count_; ++i)
    if (const uint32_t f = ring_sizes[i].first) links_[i].flits.init(f, at), at += LinkQueue<Flit>::ring_bytes(f) / sizeof(RingLine);
  for (size_t i = 0; i < link_count_; ++i)
    if (const uint32_t c = ring_sizes[i].second)
      links_[i].credits.init(c, at), at += LinkQueue<Credit>::ring_bytes(c) / sizeof(RingLine);
  for (IngressPort& p : ingress_) {
    Router* r = routers_[shape_.id(p.tile())];
    r->ingress[size_t(p.side())] = &p;
    r->has_ingress = true;
  }
  for (auto& r : routers_) {
    if (!r) continue;
    for (int d = 0; d < kDirs; ++d) {
      if (r->in_link(Dir(d))) r->in_links |= bit(Dir(d));
      if (const Link* o = r->out_link(Dir(d)); o && o->kind != LinkKind::Egress) r->credit_links |= bit(Dir(d));
    }
  }
  assign_notes(partition);
}

void Mesh::find_band_depths(const Partition& partition) {
  // Breadth first from the band-edge tiles over the hops inside each worker's tiles (a hop
  // carries wavelets one way and credits the other: either way counts).
  depth_.assign(shape_.tiles(), kRunAheadLevels);
  std::vector<TileId> frontier, further;
  for (const Link& l : links())
    if (l.kind == LinkKind::Hop && partition.owner[l.src] != partition.owner[l.dst])
      for (TileId t : {l.src, l.dst})
        if (depth_[t]) depth_[t] = 0, frontier.push_back(t);
  for (uint8_t d = 1; d < kRunAheadLevels && !frontier.empty(); ++d) {
    further.clear();
    for (TileId t : frontier) {
      const Router* r = routers_[t];
      for (int k = 0; k < kMeshDirs; ++k)
        for (const Link* l : {r->in_link(Dir(k)), r->out_link(Dir(k))}) {
          if (!l || l->kind != LinkKind::Hop) continue;
          const TileId n = l->src == t ? l->dst : l->src;
          if (partition.owner[n] == partition.owner[t] && depth_[n] > d) depth_[n] = d, further.push_back(n);
        }
    }
    std::swap(frontier, further);
  }
}

// What the last partition's crossing hops hold in their shadows (published by their dst's
// router: publish_reads), back into the hops themselves, which their dst reads again.
void Mesh::fold_shadows() {
  for (const std::unique_ptr<Shadow>& shadow : shadows_) {
    Link* s = &shadow->link;
    Link& l = links_[s->index];
    while (const Flit* f = s->flits.front()) l.flits.push(*f), s->flits.pop();
    routers_[l.dst]->in_port(opposite(l.dir)).link = &l;
  }
  shadows_.clear();
}

void Mesh::assign_notes(const Partition& partition) {
  fold_shadows();
  for (auto& r : routers_)
    if (r) r->poll_credits = r->has_ingress ? Router::kIngressPolled : 0;
  // The order in which a worker steps its tiles within a cycle (CycleEngine's run-ahead): the
  // deeper in its band first (Mesh::band_depths; the tiles of one depth are always stepped
  // together), each depth in tile order. A hop inside a band hands its credits back to src
  // without the link's queue (Link::credit_into): straight into src's lanes when src comes first
  // in that order whatever the depths reached ahead (src at least as deep as dst, and before it
  // in tile order: derive_lanes), else late (Router::kLateNote).
  find_band_depths(partition);
  assigned_owner_ = partition.owner;
  for (Link& l : links()) {
    // (The PE notes itself of what reaches its ends of the RAMP links: Pe::attach.)
    if (l.kind != LinkKind::RampDown) l.flits.set_note(nullptr, 0);
    if (l.kind != LinkKind::RampUp) l.credits.set_note(nullptr, 0);
    l.same_worker = l.dst_next = l.cross_worker = false;
    l.credit_into = nullptr;
    if (l.kind == LinkKind::Egress) continue;
    Router& src = *routers_[l.src];
    Router& dst = *routers_[l.dst];
    // The router reads a hop's flits at its dst and credits at its src, a RAMP-up's flits and a
    // RAMP-down's credits (the PE reads the other ends itself). A PE and its router are always
    // stepped by one worker; a hop's two routers only when the partition says so.
    const bool local = l.kind != LinkKind::Hop || partition.owner[l.src] == partition.owner[l.dst];
    l.same_worker = local, l.dst_next = local && l.latency == 1, l.cross_worker = !local;
    if (l.kind == LinkKind::Hop && local) l.credit_into = &src;
    // A hop between two workers is written at each end by the worker that reads it, from its
    // mail (Link::cross_worker), so its queues note their reader as every other link's do.
    // (A crossing hop's wavelets are noted from its shadow, below.)
    if (l.kind != LinkKind::RampDown && local) l.flits.set_note(&dst.noted_in, bit(l.kind == LinkKind::Hop ? opposite(l.dir) : Dir::Ramp));
    if (l.kind != LinkKind::RampUp) l.credits.set_note(&src.noted_credits, bit(l.dir));
    if (!local) {
      // Its dst's shadow of it: the wavelets' queue (what it holds now moves there) and the
      // fields a credit's return reads (Router::return_credit), none of which src writes.
      auto shadow = std::make_unique<Shadow>();
      Link& s = shadow->link;
      s.latency = l.latency, s.src = l.src, s.dst = l.dst, s.dst_place = l.dst_place, s.dir = l.dir, s.kind = l.kind;
      s.cross_worker = true, s.index = l.index;
      s.flits.init(l.flits.capacity());
      while (const Flit* f = l.flits.front()) s.flits.push(*f), l.flits.pop();
      s.flits.set_note(&dst.noted_in, bit(opposite(l.dir)));  // (nothing is pushed onto the link itself while it crosses)
      l.shadow = uint32_t(shadows_.size());
      dst.in_port(opposite(l.dir)).link = &s;
      shadows_.push_back(std::move(shadow));
    }
  }
  // Whatever a queue still holds from an earlier run is read at the next step, from where its
  // reader stands.
  for (auto& r : routers_)
    if (r) r->fold_all_late(), r->late_refused = false;
  for (auto& r : routers_) {
    if (!r) continue;
    r->noted_in = r->in_links, r->noted_credits = r->credit_links;
    for (int d = 0; d < kDirs; ++d) {
      Router::InPort& i = r->in_port(Dir(d));
      i.flits = i.link ? i.link->flits.reader() : LinkQueue<Flit>::Reader{};
      // Lane 0: a valid index where a wavelet can come (a link only brings wavelets to a router
      // with lanes), aimed at with its key by derive_lanes(); a router without lanes has no key.
      i.lane = 0, i.lane_at = nullptr, i.hop_key = Router::kNoKey;
      Router::OutPort& o = r->out_port(Dir(d));
      o.credits = o.link && o.link->kind != LinkKind::Egress ? o.link->credits.reader() : LinkQueue<Credit>::Reader{};
    }
    derive_lanes(*r);
  }
  // A router takes at most Router::kLateSlots late credits a cycle. Each comes from a lane that
  // popped a wavelet, a plain lane pops one a cycle at most, and a router pops no more lanes in
  // a cycle than the outputs they send to (a head leaves when its last copy does, one a cycle on
  // each output): from each neighbour, at most the fewer of its late lanes fed from here and
  // their outputs. Where more could come in all, none does (Router::late_refused; rare: more
  // colours toward more outputs than five at once, from one router to its neighbours west,
  // north or deeper in the band).
  std::vector<uint32_t> feeds(routers_.size(), 0);
  bool refused = false;
  for (auto& r : routers_) {
    if (!r) continue;
    for (int d = 0; d < kMeshDirs; ++d) {
      uint32_t lanes = 0, outs = 0;
      for (const Lane& lane : r->lanes)
        if ((lane.pass_here & Lane::kLateBack) && lane.rx == Dir(d)) ++lanes, outs |= lane.tx;
      if (!lanes) continue;
      const TileId src = r->in_link(Dir(d))->src;
      feeds[src] += std::min<uint32_t>(lanes, uint32_t(std::popcount(outs)));
      if (feeds[src] > Router::kLateSlots) routers_[src]->late_refused = refused = true;
    }
  }
  if (refused)
    for (auto& r : routers_)
      if (r) derive_lanes(*r);
}

void Mesh::derive_lanes(Router& router) {
  Router* const r = &router;
  // The plain lanes that send to an output alone (Lane::sole_out): their route's only tx is a
  // link that returns credits, and no other lane's route (in any switch position) names it.
  {
    std::array<uint8_t, kDirs> users{};
    for (const Lane& lane : r->lanes)
      for (uint32_t m = r->tx_union(lane); m; m &= m - 1) ++users[size_t(std::countr_zero(m))];
    for (Lane& lane : r->lanes) {
      lane.sole_out = 0, lane.sole_link = nullptr;
      if (lane.ext >= 0 || !std::has_single_bit(unsigned(lane.tx))) continue;
      const int d = std::countr_zero(unsigned(lane.tx));
      if ((r->credit_links & bit(Dir(d))) && users[size_t(d)] == 1) lane.sole_out = uint8_t(d + 1), lane.sole_link = r->out_link(Dir(d));
    }
    // Where a plain lane's credits go back to without its in link's queue: straight into the
    // sender's lane (Lane::credit_back) when the sender is stepped first in every cycle (see
    // assign_notes), else late (Lane::kLateBack), unless the sender refuses them.
    for (Lane& lane : r->lanes) {
      lane.credit_back = nullptr, lane.pass_here = 0;
      const Link* up = r->in_link(lane.rx);
      if (lane.ext >= 0 || !up || !up->credit_into) continue;
      Lane* sender = up->credit_into->lane(lane.colour);
      if (!sender) continue;
      if (up->src < up->dst && depth_[up->src] >= depth_[up->dst]) lane.credit_back = &sender->credits[size_t(up->dir)];
      else if (!up->credit_into->late_refused) lane.pass_here = Lane::kLateBack;
    }
    for (Lane& lane : r->lanes)
      if (lane.sole_out && (lane.credit_back || lane.pass_here) && lane.sole_link->dst_next) lane.pass_here |= Lane::kPassHere;
  }
  // The in ports' keys for the lanes they are aimed at (Router::InPort::hop_key), which a lane
  // given a switch or a filter no longer matches.
  for (int d = 0; d < kDirs; ++d)
    if (Router::InPort& i = r->in_port(Dir(d)); i.link && i.lane < r->lanes.size()) r->aim(i, Dir(d), i.lane);
}

void Mesh::share_io_bandwidth(double bytes_per_cycle) {
  const double per_cycle = bytes_per_cycle / 4.0;  // 32-bit wavelets
  // Shared by the ports the run uses, in each direction: ingress ports with wavelets to send, and
  // egress ports the kernel says carry something. (All egress ports shared it until the forty-first
  // round: an FC layer's dW left at q / (p + q) of the rate, the east loss ports idle beside it.)
  size_t n_in = 0, n_out = 0;
  for (const IngressPort& p : ingress_) n_in += p.size() > p.sent();
  for (const EgressPort& p : egress_) n_out += p.carries();
  for (IngressPort& p : ingress_) p.set_rate(per_cycle > 0 && n_in ? PortRate::from(per_cycle / double(n_in)) : PortRate{});
  for (EgressPort& p : egress_) p.set_rate(per_cycle > 0 && n_out ? PortRate::from(per_cycle / double(n_out)) : PortRate{});
}

void Mesh::finalize(const Partition& partition) {
  if (spec_.hop_latency_cycles < 1 || spec_.hop_latency_cycles > MachineSpec::kMaxLatency ||
      spec_.ramp_latency_cycles < 1 || spec_.ramp_latency_cycles > MachineSpec::kMaxLatency)
    throw UsageError("machine spec: hop_latency_cycles and ramp_latency_cycles must be in [1, " +
                     std::to_string(MachineSpec::kMaxLatency) + "]");
  if (spec_.router_buffer_depth < 1 || spec_.router_buffer_depth > MachineSpec::kMaxDepth ||
      spec_.pe_input_queue_depth < 1 || spec_.pe_input_queue_depth > MachineSpec::kMaxDepth)
    throw UsageError("machine spec: router_buffer_depth and pe_input_queue_depth must be in [1, " +
                     std::to_string(MachineSpec::kMaxDepth) + "]");
  validate();
  // Ingress ports: every colour a port carries must be received from that side at its tile.
  for (IngressPort& p : ingress_) {
    const Router* r = routers_[shape_.id(p.tile())];
    uint32_t checked = 0;
    for (uint64_t k = 0; k < p.size(); ++k) {
      Colour col = p.wavelet(k).colour;
      if (col < 32 && (checked & (1u << col))) continue;
      if (col < 32) checked |= 1u << col;
      const Lane* lane = (r && col < spec_.colours) ? r->lane(col) : nullptr;
      if (!lane || !(r->rx_union(*lane) & bit(p.side())))
        throw RouteError("ingress port at tile " + to_string(p.tile()) + " side " + dir_name(p.side()) +
                         " carries colour " + std::to_string(col) + ", but that tile has no route receiving colour " +
                         std::to_string(col) + " from " + dir_name(p.side()));
    }
  }
  share_io_bandwidth(spec_.io_bytes_per_cycle);
  build_links(partition);
}

}  // namespace wse
