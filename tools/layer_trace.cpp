#include "tools/layer_trace.hpp"

#include <algorithm>
#include <set>

#include "core/errors.hpp"

namespace wse {

namespace {

constexpr uint32_t kRowsPerBlock = 64;

bool is_multiply(const char* op) {
  const std::string_view s(op);
  return s == "fmacs" || s == "fmach" || s == "fmachs" || s == "fmuls" || s == "fmulh";
}

uint64_t receiver_key(Coord c, Colour colour) { return uint64_t(c.y) << 40 | uint64_t(c.x) << 8 | colour; }

std::string task_base(const Program* program, bool local, Colour id) {
  if (!program) return local ? "local task " + std::to_string(id) : "data task c" + std::to_string(id);
  std::string n = program->task_name(local, id);
  // An unnamed data task's default name already says its colour.
  if (!local && n.rfind("data task c", 0) != 0) n += " c" + std::to_string(id);
  return n;
}

}  // namespace

std::string LayerTrace::task_name(const Program* program, const TaskCost& t) {
  if (t.op) return "@" + std::string(t.op);
  std::string n = task_base(program, t.local, t.colour);
  // The class of the memory-op cycles the task ran: with the duration (receive first) it gives
  // the split, so a slice needs no arguments unless it has both classes.
  if (t.fmac && t.move) n += " \u00b7 fmac+move";
  else if (t.fmac) n += " \u00b7 fmac";
  else if (t.move) n += " \u00b7 move";
  return n;
}

LayerTrace::LayerTrace(TraceSink& sink, const ActivityRecorder& rec, LayerTraceOptions opt) : sink_(sink), opt_(std::move(opt)) {
  const Wafer& w = rec.wafer();
  const MeshShape shape = w.shape();
  TileRect r = opt_.pes;
  r.x1 = std::min(r.x1, shape.width), r.y1 = std::min(r.y1, shape.height);
  const std::string what = rec.meta().layer + " " + rec.meta().pass;
  TraceInfo info{w.spec().name, rec.meta().layer, rec.meta().pass, std::to_string(shape.width) + "x" + std::to_string(shape.height),
                 rec.interval(), rec.start_cycle()};
  info.scope = TraceScope{r.x0, r.y0, r.x1, r.y1, opt_.from, opt_.to, opt_.detail != TraceDetail::Counters};
  sink_.begin(info);
  const bool counters = opt_.detail != TraceDetail::Tasks;

  const TrackId streams = sink_.group(0, "Streams (MemoryX, host)", 0);
  memoryx_ = sink_.slice_track(streams, "MemoryX", 0);
  host_ = sink_.slice_track(streams, "host", 1);
  if (counters) {
    ingress_ = sink_.counter_track(streams, "ingress wavelets per cycle", CounterUnit::Ratio, 2);
    egress_ = sink_.counter_track(streams, "egress wavelets per cycle", CounterUnit::Ratio, 3);
    const TrackId fabric = sink_.group(0, "Fabric (" + what + ")", 1);
    sram_total_ = sink_.counter_track(fabric, "SRAM bytes in use (wafer)", CounterUnit::Bytes, 0);
    util_max_ = sink_.counter_track(fabric, "link utilization (max)", CounterUnit::Ratio, 1);
    util_mean_ = sink_.counter_track(fabric, "link utilization (mean)", CounterUnit::Ratio, 2);
    bp_total_ = sink_.counter_track(fabric, "link backpressure cycles", CounterUnit::Count, 3);
    hops_ = sink_.counter_track(fabric, "wavelet hops per cycle", CounterUnit::Ratio, 4);
    std::set<Colour> colours(opt_.colours.begin(), opt_.colours.end());
    if (opt_.colours.empty())
      for (const LaneRef& l : rec.lanes()) colours.insert(l.colour);
    int rank = 5;
    for (Colour c : colours) {
      if (c >= w.spec().colours) continue;
      const TrackId g = sink_.group(fabric, "colour " + std::to_string(c), rank++);
      colour_tracks_.push_back({c, {sink_.counter_track(g, "c" + std::to_string(c) + " wavelets per cycle", CounterUnit::Ratio, 0),
                                    sink_.counter_track(g, "c" + std::to_string(c) + " backpressure cycles", CounterUnit::Count, 1)}});
    }
    const auto& links = w.mesh().links();
    for (uint32_t l = 0; l < links.size(); ++l)
      if (links[l].kind == LinkKind::Hop) hop_links_.push_back(l);
  }

  // The PEs: those with a program in the rectangle, row-major (the recorder's traced order).
  pes_group_ = sink_.group(0, "PEs (" + what + ")", 2);
  if (!r.empty()) {
    const auto& tiles = rec.tiles();
    // Links leaving each tile (hop, ramp and egress links with that source), for its counters.
    const auto& links = w.mesh().links();
    std::vector<std::vector<uint32_t>> by_tile;
    std::vector<std::pair<TileId, uint32_t>> src;
    for (uint32_t l = 0; l < links.size(); ++l) src.push_back({links[l].src, l});
    std::sort(src.begin(), src.end());
    TrackId block = pes_group_;
    const bool blocks = r.y1 - r.y0 > kRowsPerBlock;
    for (uint32_t y = r.y0; y < r.y1; ++y) {
      if (blocks && (y - r.y0) % kRowsPerBlock == 0)
        block = sink_.group(pes_group_, "rows " + std::to_string(y) + "-" + std::to_string(std::min(r.y1, y + kRowsPerBlock) - 1),
                            int(y));
      TrackId row = 0;
      for (uint32_t x = r.x0; x < r.x1; ++x) {
        const Pe& pe = w.pe({x, y});
        if (!pe.program) continue;
        if (!row) row = sink_.group(block, "row " + std::to_string(y), int(y));
        PeTracks p;
        p.coord = {x, y};
        p.program = pe.program;
        const TileId t = shape.id({x, y});
        p.tile_index = uint32_t(std::lower_bound(tiles.begin(), tiles.end(), t) - tiles.begin());
        p.links_begin = uint32_t(link_of_pe_.size());
        for (auto it = std::lower_bound(src.begin(), src.end(), std::make_pair(t, 0u)); it != src.end() && it->first == t; ++it)
          link_of_pe_.push_back(it->second);
        p.links_end = uint32_t(link_of_pe_.size());
        p.main = sink_.slice_track(row, "PE " + to_string(p.coord), int(x));
        if (counters) {
          p.sram = sink_.counter_track(p.main, "SRAM bytes", CounterUnit::Bytes, 100);
          p.queue = sink_.counter_track(p.main, "input queue wavelets", CounterUnit::Count, 101);
          p.link_util = sink_.counter_track(p.main, "busiest link utilization", CounterUnit::Ratio, 102);
          p.link_bp = sink_.counter_track(p.main, "link backpressure cycles", CounterUnit::Count, 103);
        }
        pes_.push_back(std::move(p));
      }
    }
  }
  stats_.pes = pes_.size();
  if (!opt_.flows.empty()) build_paths(rec, sink_.group(0, "Wavelet paths", 3));
}

void LayerTrace::build_paths(const ActivityRecorder& rec, TrackId parent) {
  const Wafer& w = rec.wafer();
  const MeshShape shape = w.shape();
  const auto& lanes = rec.lanes();
  auto lane_at = [&](TileId t, Colour c) -> int {
    // rec.lanes() is in tile order: binary search the tile, then scan its few lanes.
    auto it = std::lower_bound(lanes.begin(), lanes.end(), t, [](const LaneRef& l, TileId x) { return l.tile < x; });
    for (; it != lanes.end() && it->tile == t; ++it)
      if (it->colour == c) return int(it - lanes.begin());
    return -1;
  };
  int rank = 0;
  for (const FlowRequest& req : opt_.flows) {
    const std::string name = "c" + std::to_string(req.colour) + " from PE " + to_string(req.from);
    if (!shape.contains(req.from.x, req.from.y))
      throw UsageError("--flow " + std::to_string(req.colour) + "@" + std::to_string(req.from.x) + "," + std::to_string(req.from.y) +
                       ": PE " + to_string(req.from) + " is outside the " + std::to_string(shape.width) + "x" + std::to_string(shape.height) +
                       " mesh");
    const TileId t0 = shape.id(req.from);
    const int l0 = lane_at(t0, req.colour);
    const Router* r0 = w.mesh().router(t0);
    const Lane* lane0 = r0 ? r0->lane(req.colour) : nullptr;
    if (l0 < 0 || !lane0 || !(r0->rx_union(*lane0) & bit(Dir::Ramp)))
      throw UsageError("--flow " + std::to_string(req.colour) + "@" + std::to_string(req.from.x) + "," + std::to_string(req.from.y) +
                       ": PE " + to_string(req.from) + " sends nothing on colour " + std::to_string(req.colour) +
                       " (its router has no route for that colour from its PE)");
    Path p;
    p.req = req;
    const TrackId g = sink_.group(parent, name, rank++);
    std::set<TileId> seen = {t0};
    p.hops.push_back({t0, uint32_t(l0), -1, 0});
    for (size_t i = 0; i < p.hops.size() && p.hops.size() < 4096; ++i) {
      const LaneRef& l = lanes[p.hops[i].lane];
      const Coord here = shape.coord(l.tile);
      for (int d = 0; d < kDirs; ++d) {
        if (!(l.tx >> d & 1)) continue;
        if (Dir(d) == Dir::Ramp) {
          p.deliveries.push_back({int(i), here});
          continue;
        }
        Coord n;
        if (!shape.neighbour(here, Dir(d), n)) continue;  // off the edge (egress)
        const TileId nt = shape.id(n);
        const int nl = lane_at(nt, req.colour);
        if (nl < 0 || !seen.insert(nt).second) continue;
        p.hops.push_back({nt, uint32_t(nl), int(i), 0});
      }
    }
    for (size_t i = 0; i < p.hops.size(); ++i)
      p.hops[i].track = sink_.slice_track(g, "hop " + std::to_string(i) + ": router " + to_string(shape.coord(p.hops[i].tile)), int(i));
    paths_.push_back(std::move(p));
  }
}

void LayerTrace::emit_paths(const IntervalFrame& f, const std::vector<uint64_t>& receivers) {
  pending_in_.clear();
  if (f.end <= opt_.from || f.start >= opt_.to) return;
  for (size_t pi = 0; pi < paths_.size(); ++pi) {
    Path& p = paths_[pi];
    // Flow ids: unique per path, edge and interval.
    auto id = [&](size_t edge) { return (uint64_t(pi + 1) << 48) | (uint64_t(f.index) << 20) | edge; };
    std::vector<std::vector<uint64_t>> out(p.hops.size()), in(p.hops.size());
    for (size_t i = 1; i < p.hops.size(); ++i) {
      const size_t par = size_t(p.hops[i].parent);
      if (f.lane_wavelets[p.hops[i].lane] && f.lane_wavelets[p.hops[par].lane]) out[par].push_back(id(i)), in[i].push_back(id(i));
    }
    // A delivery's flow ends at the receiving PE's first data task on the colour in this
    // interval; a PE that reads the colour with a DSD op runs no such task, and the flow stops
    // at its router.
    for (size_t k = 0; k < p.deliveries.size(); ++k) {
      const auto& [hop, pe] = p.deliveries[k];
      if (!f.lane_wavelets[p.hops[size_t(hop)].lane]) continue;
      if (!std::binary_search(receivers.begin(), receivers.end(), receiver_key(pe, p.req.colour))) continue;
      out[size_t(hop)].push_back(id(p.hops.size() + k));
      pending_in_.push_back({pe, {p.req.colour, id(p.hops.size() + k)}});
    }
    for (size_t i = 0; i < p.hops.size(); ++i) {
      const uint64_t wv = f.lane_wavelets[p.hops[i].lane];
      if (!wv) continue;
      const TraceArg args[] = {{"wavelets", wv, {}}, {"backpressure_cycles", f.lane_backpressure[p.hops[i].lane], {}}};
      sink_.slice(p.hops[i].track, f.start, std::max(f.end, f.start + 1), "c" + std::to_string(p.req.colour), args, out[i], in[i]);
      ++stats_.slices;
    }
  }
}

void LayerTrace::emit_slices(const TracedPe& log, PeTracks& pe, Cycle start_cycle) {
  for (const TaskCost& t : log.tasks) {
    const Cycle s = t.start - std::min(t.start, start_cycle), e = t.end() - std::min(t.end(), start_cycle);
    if (e <= opt_.from || s >= opt_.to) continue;
    TrackId track = pe.main;
    if (t.thread) {
      if (pe.uts.size() < t.thread) pe.uts.resize(t.thread, 0);
      TrackId& u = pe.uts[t.thread - 1];
      if (!u) u = sink_.slice_track(pe.main, "ut" + std::to_string(t.thread - 1), t.thread);
      track = u;
    }
    TraceArg args[3];
    size_t n = 0;
    std::string issued;
    if (t.op) {
      args[n++] = {is_multiply(t.op) ? "fmac" : "move", uint64_t(t.fmac) + t.move, {}};
      issued = task_base(pe.program, t.local, t.colour);
      args[n++] = {"issued_by", 0, issued};
    } else if (t.fmac && t.move) {
      args[n++] = {"fmac", t.fmac, {}};
      args[n++] = {"move", t.move, {}};
    } else if (t.receive + t.fmac + t.move == 0) {
      args[n++] = {"datapath_cycles", 0, {}};  // a 1-cycle slice that used no datapath cycle
    }
    // The first data task on a --flow path's colour in this interval ends that path's flow.
    uint64_t flow_in = 0;
    if (!t.op && !t.local && !pending_in_.empty()) {
      for (auto& pend : pending_in_)
        if (pend.first == pe.coord && pend.second.first == t.colour) {
          flow_in = pend.second.second;
          pend.first = {~0u, ~0u};  // taken
          break;
        }
    }
    sink_.slice(track, s, e, task_name(pe.program, t), std::span<const TraceArg>(args, n), {},
                flow_in ? std::span<const uint64_t>(&flow_in, 1) : std::span<const uint64_t>());
    ++stats_.slices;
  }
}

void LayerTrace::on_interval(const ActivityRecorder& rec, const IntervalFrame& f, std::span<const TracedPe> traced) {
  if (!traced.empty() && traced.size() != pes_.size()) throw std::logic_error("LayerTrace: traced PEs differ from the trace's");
  if (!paths_.empty()) {
    // The traced PEs that ran a data task in this interval, by colour: where flows can end.
    std::vector<uint64_t> receivers;
    if (opt_.detail != TraceDetail::Counters)
      for (const TracedPe& pe : traced)
        for (const TaskCost& t : pe.tasks)
          if (!t.op && !t.local && (receivers.empty() || receivers.back() != receiver_key(pe.coord, t.colour)))
            receivers.push_back(receiver_key(pe.coord, t.colour));
    std::sort(receivers.begin(), receivers.end());
    receivers.erase(std::unique(receivers.begin(), receivers.end()), receivers.end());
    emit_paths(f, receivers);
  }
  if (opt_.detail != TraceDetail::Counters)
    for (size_t i = 0; i < traced.size(); ++i) emit_slices(traced[i], pes_[i], rec.start_cycle());
  if (opt_.detail == TraceDetail::Tasks || f.end <= opt_.from || f.start >= opt_.to) return;

  // Counters: one point per interval (each holds until the next point). What the interval did
  // (rates, backpressure) at its start, so the value covers the cycles it describes; a level
  // (SRAM bytes, input queue wavelets), which the recorder reads at the interval's end, at its end.
  const double len = double(std::max<Cycle>(1, f.end - f.start));
  auto put_at = [&](Cycle at, TrackId t, double v) {
    if (sink_.counter(t, at, v)) ++stats_.counter_points;  // as the file holds them: a point per change
  };
  auto put = [&](TrackId t, double v) { put_at(f.start, t, v); };
  auto put_level = [&](TrackId t, double v) { put_at(f.end, t, v); };
  double max_u = 0, sum_u = 0;
  uint64_t bp = 0, hops = 0;
  for (size_t l = 0; l < f.link_wavelets.size(); ++l) {
    const double u = double(f.link_wavelets[l]) / len;
    max_u = std::max(max_u, u), sum_u += u, bp += f.link_backpressure[l];
  }
  for (uint32_t l : hop_links_) hops += f.link_wavelets[l];
  put(util_max_, max_u);
  put(util_mean_, f.link_wavelets.empty() ? 0.0 : sum_u / double(f.link_wavelets.size()));
  put(bp_total_, double(bp));
  put(hops_, double(hops) / len);
  for (const auto& [c, tr] : colour_tracks_) {
    put(tr.first, double(f.colour_wavelets[c]) / len);
    put(tr.second, double(f.colour_backpressure[c]));
  }
  put(ingress_, double(f.ingress_wavelets) / len);
  put(egress_, double(f.egress_wavelets) / len);
  for (const PeTracks& p : pes_) {
    uint64_t busiest = 0, pbp = 0;
    for (uint32_t k = p.links_begin; k < p.links_end; ++k) {
      const uint32_t l = link_of_pe_[k];
      busiest = std::max(busiest, f.link_wavelets[l]);
      pbp += f.link_backpressure[l];
    }
    put(p.link_util, double(busiest) / len);
    put(p.link_bp, double(pbp));
  }
  // The levels after the rates: the counters share one sequence, whose points go in time order.
  uint64_t sram = 0;
  for (uint32_t b : f.sram_bytes) sram += b;
  put_level(sram_total_, double(sram));
  for (const PeTracks& p : pes_) {
    put_level(p.sram, f.sram_bytes[p.tile_index]);
    put_level(p.queue, f.input_occupancy[p.tile_index]);
  }
}

void LayerTrace::finish(const ActivityRecorder& rec) {
  for (const StreamPhase& p : rec.stream_phases()) {
    // Kept whole, as a PE's slices are: clipped to [from, to), a stream's slice kept its whole
    // wavelet count (3 wavelets in a 1-cycle slice).
    const Cycle s = p.start, e = p.end;
    if (std::min(e, opt_.to) <= std::max(s, opt_.from)) continue;
    const TraceArg args[] = {{"wavelets", p.wavelets, {}}};
    sink_.slice(p.track == "MemoryX" ? memoryx_ : host_, s, e, p.name, args);
    ++stats_.slices;
  }
  sink_.finish();
}

}  // namespace wse
