#include "wafer/activity_recorder.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "core/errors.hpp"
#include "io/memory_limit.hpp"
#include "io/output_file.hpp"
#include "schemas/activity_dump_generated.h"

namespace wse {

namespace {

// PE metrics, in the order they are stored. stall_input and idle are derived when the run ends.
enum PeMetric : size_t {
  kReceive, kFmac, kMove, kSend, kStallBackpressure, kSetup, kStallInput, kIdle, kTasks, kWaveletsIn, kWaveletsOut, kMacs,
  kSramBytes, kSramHighWater, kInputOccupancy, kPeMetrics
};
struct MetricName {
  const char* name;
  const char* unit;
};
constexpr MetricName kPeNames[kPeMetrics] = {
    {"receive_cycles", "cycles"},  {"fmac_cycles", "cycles"},   {"move_cycles", "cycles"},
    {"send_cycles", "cycles"},     {"stall_backpressure_cycles", "cycles"}, {"setup_cycles", "cycles"},
    {"stall_input_cycles", "cycles"}, {"idle_cycles", "cycles"}, {"tasks", "tasks"},
    {"wavelets_in", "wavelets"},   {"wavelets_out", "wavelets"}, {"macs", "macs"},
    {"sram_bytes", "bytes"},       {"sram_high_water_bytes", "bytes"}, {"input_queue_occupancy", "wavelets"}};
enum LinkMetric : size_t { kLinkWavelets, kLinkBackpressure, kLinkMetrics };
constexpr MetricName kLinkNames[kLinkMetrics] = {{"wavelets", "wavelets"}, {"backpressure_cycles", "cycles"}};

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v | 0x80));
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}

uint64_t get_varint(const std::vector<uint8_t>& in, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = in[pos++];
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

// Cycles of task `t` that elapse at or after `b`, by class (they elapse receive, fmac, move, back
// to back but for the `paused` cycles before `b` in which a microthread had the datapath: those
// were the microthread's, and were counted as its moves, not as the task's).
struct Future {
  uint64_t receive = 0, fmac = 0, move = 0;
};
Future future_part(const TaskCost& t, uint32_t paused, Cycle b) {
  const uint64_t since = b > t.start ? b - t.start : 0;
  uint64_t done = since > paused ? since - paused : 0;
  auto take = [&](uint32_t n) {
    uint64_t d = std::min<uint64_t>(n, done);
    done -= d;
    return n - d;
  };
  Future f;
  f.receive = take(t.receive);
  f.fmac = take(t.fmac);
  f.move = take(t.move);
  return f;
}

}  // namespace

ActivityRecorder::ActivityRecorder(Wafer& wafer, ActivityMeta meta, Cycle interval)
    : wafer_(wafer), meta_(std::move(meta)), interval_(interval) {
  if (interval_ == 0) throw UsageError("activity dump: the interval must be at least 1 cycle");
  const auto& pes = wafer_.pes();
  for (TileId t = 0; t < pes.size(); ++t)
    if (pes[t].program || wafer_.mesh().router(t)) tiles_.push_back(t);
  tile_prev_.resize(tiles_.size());
  last_active_.assign(tiles_.size(), 0);
  link_prev_.resize(wafer_.mesh().links().size());
  colour_prev_.resize(wafer_.spec().colours);
  pe_cols_.resize(kPeMetrics);
  link_cols_.resize(kLinkMetrics);
  colour_cols_.resize(kLinkMetrics);
  // The wafer's clock and counters carry on from earlier runs (earlier layers): start from them.
  start_ = last_boundary_ = wafer_.clock();
  for (size_t i = 0; i < tiles_.size(); ++i) tile_prev_[i] = tile_counters(pes[tiles_[i]], start_);
  const auto& links = wafer_.mesh().links();
  for (size_t i = 0; i < links.size(); ++i) link_prev_[i] = {links[i].counters.wavelets, links[i].counters.backpressure_cycles};
  colour_prev_ = colour_counters();
  // Every lane of a stored tile's router, in tile then lane order.
  for (TileId t : tiles_)
    if (const Router* r = wafer_.mesh().router(t))
      for (const Lane& lane : r->lanes) {
        lanes_.push_back({t, lane.colour, r->tx_union(lane)});
        lane_prev_.push_back({lane.counters.wavelets, lane.counters.backpressure_cycles});
      }
  lane_cols_.resize(kLinkMetrics);
  ingress_prev_ = ingress_sent();
  egress_prev_ = egress_arrived(start_);
  for (const IngressPort& p : wafer_.mesh().ingress_ports())
    if (!p.drained()) ingress_first_ready_.push_back(p.next_ready());
}

ActivityRecorder::TilePrev ActivityRecorder::tile_counters(const Pe& pe, Cycle b) {
  const PeCounters& c = pe.counters;
  const Future f = future_part(pe.last_task(), pe.last_task_paused(), b);
  return {c.receive_cycles - f.receive, c.fmac_cycles - f.fmac, c.move_cycles - f.move, c.send_cycles,
          c.stall_send_cycles, c.setup_cycles, c.tasks, c.wavelets_in, c.wavelets_out, c.macs};
}

std::vector<ActivityRecorder::LinkPrev> ActivityRecorder::colour_counters() const {
  std::vector<LinkPrev> colours(wafer_.spec().colours);
  for (TileId t : tiles_)
    if (const Router* r = wafer_.mesh().router(t))
      for (const Lane& lane : r->lanes)
        if (lane.colour < colours.size())
          colours[lane.colour].wavelets += lane.counters.wavelets,
              colours[lane.colour].backpressure += lane.counters.backpressure_cycles;
  return colours;
}

uint64_t ActivityRecorder::ingress_sent() const {
  uint64_t in = 0;
  for (const IngressPort& p : wafer_.mesh().ingress_ports()) in += p.sent();
  return in;
}

uint64_t ActivityRecorder::egress_arrived(Cycle before) {
  uint64_t out = 0;
  for (const EgressPort& p : wafer_.mesh().egress_ports()) {
    const auto& r = p.received();  // arrival cycles ascend per port
    const auto to = std::partition_point(r.begin(), r.end(), [&](const EgressArrival& a) { return a.cycle < before; });
    out += uint64_t(to - r.begin());
    // The egress stream's first and last arrivals in the recording, kept as the run goes: a
    // port's arrivals are gone once a later run restarts it, and a training step runs its other
    // passes after the traced one before the trace is finished (only the step's last pass kept
    // its egress slice: a trace audit, forty-sixth round).
    const auto from = std::partition_point(r.begin(), to, [&](const EgressArrival& a) { return a.cycle < start_; });
    if (from != to) egress_first_ = std::min(egress_first_, from->cycle), egress_end_ = std::max(egress_end_, (to - 1)->cycle + 1);
  }
  return out;
}

ActivityRecorder::~ActivityRecorder() { set_logs(false); }

void ActivityRecorder::set_logs(bool on) {
  for (TracedPe& t : traced_) wafer_.pe(t.coord).task_log = on ? &t.tasks : nullptr;
}

void ActivityRecorder::trace_tasks(TileRect rect) {
  const MeshShape s = wafer_.shape();
  rect.x1 = std::min(rect.x1, s.width), rect.y1 = std::min(rect.y1, s.height);
  set_logs(false);
  traced_.clear();
  if (rect.empty()) return;
  // Only PEs with a program run tasks. The vector is not resized after this, so the addresses
  // the PEs log to stay valid.
  size_t n = 0;
  for (uint32_t y = rect.y0; y < rect.y1; ++y)
    for (uint32_t x = rect.x0; x < rect.x1; ++x) n += wafer_.pe({x, y}).program != nullptr;
  traced_.reserve(n);
  for (uint32_t y = rect.y0; y < rect.y1; ++y)
    for (uint32_t x = rect.x0; x < rect.x1; ++x)
      if (wafer_.pe({x, y}).program) traced_.push_back({{x, y}, {}});
  set_logs(true);
}

RunHooks ActivityRecorder::hooks(ProgressFn progress) {
  RunHooks h;
  h.progress = std::move(progress);
  h.sample_interval = interval_;
  h.sample = [this](Cycle b) { sample(b); };
  return h;
}

void ActivityRecorder::sample(Cycle boundary) {
  if (finished_) throw std::logic_error("ActivityRecorder::sample after dump()");
  if (boundary <= last_boundary_ && !starts_.empty()) return;
  const size_t k = starts_.size();
  starts_.push_back(last_boundary_ - start_);
  for (auto* cols : {&pe_cols_, &link_cols_, &colour_cols_, &lane_cols_})
    for (auto& c : *cols) c.emplace_back();
  // The frame for the observer: only kept when there is one (its size is the mesh's, not the run's).
  IntervalFrame& f = frame_;
  const bool keep = observer_ != nullptr;
  if (keep) {
    f.index = k, f.start = last_boundary_ - start_, f.end = boundary - start_;
    for (auto* v : {&f.receive, &f.fmac, &f.move, &f.send, &f.stall_backpressure, &f.setup, &f.tasks, &f.wavelets_in,
                    &f.wavelets_out, &f.macs})
      v->resize(tiles_.size());
    for (auto* v : {&f.sram_bytes, &f.sram_high_water, &f.input_occupancy}) v->resize(tiles_.size());
    f.link_wavelets.resize(link_prev_.size()), f.link_backpressure.resize(link_prev_.size());
    f.lane_wavelets.resize(lanes_.size()), f.lane_backpressure.resize(lanes_.size());
    f.colour_wavelets.resize(colour_prev_.size()), f.colour_backpressure.resize(colour_prev_.size());
  }

  const auto& pes = wafer_.pes();
  for (size_t i = 0; i < tiles_.size(); ++i) {
    const Pe& pe = pes[tiles_[i]];
    const TilePrev now = tile_counters(pe, boundary);
    TilePrev& p = tile_prev_[i];
    const uint64_t d[] = {now.receive - p.receive, now.fmac - p.fmac, now.move - p.move, now.send - p.send,
                          now.stall - p.stall, now.setup - p.setup};
    for (size_t m = 0; m < 6; ++m) put_varint(pe_cols_[m][k], d[m]);
    put_varint(pe_cols_[kTasks][k], now.tasks - p.tasks);
    put_varint(pe_cols_[kWaveletsIn][k], now.in - p.in);
    put_varint(pe_cols_[kWaveletsOut][k], now.out - p.out);
    put_varint(pe_cols_[kMacs][k], now.macs - p.macs);
    put_varint(pe_cols_[kSramBytes][k], pe.sram.bytes_in_use());
    put_varint(pe_cols_[kSramHighWater][k], pe.sram.high_water());
    put_varint(pe_cols_[kInputOccupancy][k], pe.input_occupancy());
    if (d[0] | d[1] | d[2] | d[3] | d[4] | d[5] | (now.in - p.in)) last_active_[i] = uint32_t(k + 1);
    if (keep) {
      f.receive[i] = d[0], f.fmac[i] = d[1], f.move[i] = d[2], f.send[i] = d[3], f.stall_backpressure[i] = d[4], f.setup[i] = d[5];
      f.tasks[i] = now.tasks - p.tasks, f.wavelets_in[i] = now.in - p.in, f.wavelets_out[i] = now.out - p.out;
      f.macs[i] = now.macs - p.macs;
      f.sram_bytes[i] = pe.sram.bytes_in_use(), f.sram_high_water[i] = pe.sram.high_water();
      f.input_occupancy[i] = pe.input_occupancy();
    }
    p = now;
  }

  const auto& links = wafer_.mesh().links();
  for (size_t i = 0; i < links.size(); ++i) {
    const LinkCounters& c = links[i].counters;
    LinkPrev& p = link_prev_[i];
    put_varint(link_cols_[kLinkWavelets][k], c.wavelets - p.wavelets);
    put_varint(link_cols_[kLinkBackpressure][k], c.backpressure_cycles - p.backpressure);
    if (keep) f.link_wavelets[i] = c.wavelets - p.wavelets, f.link_backpressure[i] = c.backpressure_cycles - p.backpressure;
    p = {c.wavelets, c.backpressure_cycles};
  }

  for (size_t i = 0, j = 0; i < tiles_.size(); ++i)
    if (const Router* r = wafer_.mesh().router(tiles_[i]))
      for (const Lane& lane : r->lanes) {
        LinkPrev& p = lane_prev_[j];
        const uint64_t w = lane.counters.wavelets - p.wavelets, bp = lane.counters.backpressure_cycles - p.backpressure;
        put_varint(lane_cols_[kLinkWavelets][k], w);
        put_varint(lane_cols_[kLinkBackpressure][k], bp);
        if (keep) f.lane_wavelets[j] = w, f.lane_backpressure[j] = bp;
        p = {lane.counters.wavelets, lane.counters.backpressure_cycles};
        ++j;
      }

  std::vector<LinkPrev> colours = colour_counters();
  for (size_t c = 0; c < colours.size(); ++c) {
    put_varint(colour_cols_[kLinkWavelets][k], colours[c].wavelets - colour_prev_[c].wavelets);
    put_varint(colour_cols_[kLinkBackpressure][k], colours[c].backpressure - colour_prev_[c].backpressure);
    if (keep)
      f.colour_wavelets[c] = colours[c].wavelets - colour_prev_[c].wavelets,
      f.colour_backpressure[c] = colours[c].backpressure - colour_prev_[c].backpressure;
  }
  colour_prev_ = std::move(colours);

  const uint64_t in = ingress_sent(), out = egress_arrived(boundary);
  ingress_series_.push_back(in - std::min(in, ingress_prev_));
  egress_series_.push_back(out - std::min(out, egress_prev_));
  ingress_prev_ = in, egress_prev_ = out;
  last_boundary_ = boundary;
  if (keep) f.ingress_wavelets = ingress_series_.back(), f.egress_wavelets = egress_series_.back();

  check_growth(k);

  // Hand the traced PEs' slices over (or drop them), so the logs hold one interval at most.
  if (observer_) observer_->on_interval(*this, f, traced_);
  for (TracedPe& t : traced_) t.tasks.clear();
}

void ActivityRecorder::check_growth(size_t k) {
  // What interval k added: each column's bytes and its vector, and the two series' entries.
  uint64_t added = 2 * sizeof(uint64_t);
  for (auto* cols : {&pe_cols_, &link_cols_, &colour_cols_, &lane_cols_})
    for (const auto& c : *cols) added += c[k].capacity() + sizeof(std::vector<uint8_t>);
  bytes_ += added;
  if (bytes_ < next_check_) return;
  check_memory(bytes_, "the activity recorder (" + format_bytes(bytes_) + " after " + std::to_string(k + 1) + " intervals of " +
                           std::to_string(interval_) + " cycles), to grow by as much again,",
               " (raise --interval: the recorder keeps every interval of the run, whatever window the trace keeps)");
  next_check_ = bytes_ * 2;
}

void ActivityRecorder::finish() {
  finished_ = true;
  set_logs(false);
  const size_t n = starts_.size();
  const auto& pes = wafer_.pes();
  // Waiting for input: cycles of a PE with a program that are neither busy nor stalled, up to
  // its last activity (Pe::active_end(): within its last interval with any, the cycles after it
  // are idle too); after that (or without a program) the PE is idle.
  pe_cols_[kStallInput].assign(n, {});
  pe_cols_[kIdle].assign(n, {});
  for (size_t k = 0; k < n; ++k) {
    const Cycle len = (k + 1 < n ? starts_[k + 1] : last_boundary_ - start_) - starts_[k];
    size_t pos[6] = {};
    for (size_t i = 0; i < tiles_.size(); ++i) {
      // The datapath's cycles, its send stalls and its ops' setup; sends overlap them (output queues).
      uint64_t used = 0;
      for (size_t m = 0; m < 6; ++m) {
        const uint64_t x = get_varint(pe_cols_[m][k], pos[m]);
        if (m != kSend) used += x;
      }
      const uint64_t rest = len - std::min<uint64_t>(len, used);
      const Pe& pe = pes[tiles_[i]];
      const bool waiting = pe.program && k < last_active_[i];
      uint64_t idle = waiting ? 0 : rest;
      if (waiting && k + 1 == last_active_[i]) {
        // The last interval with activity: what follows the PE's last active cycle is idle
        // (every counted cycle lies before it, so the tail is all in `rest`).
        const Cycle from = start_ + starts_[k], to = from + len;
        idle = std::min<uint64_t>(rest, to - std::clamp(pe.active_end(), from, to));
      }
      put_varint(pe_cols_[kStallInput][k], rest - idle);
      put_varint(pe_cols_[kIdle][k], idle);
    }
  }

  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  auto column = [&](const std::vector<uint8_t>& bytes, size_t count) {
    return fb::CreateColumn(fbb, uint32_t(count), fbb.CreateVector(bytes));
  };
  // Each column is released once it is in the buffer, so the peak is about twice the dump, not
  // three times (a full wafer's dump is ~175 MB).
  auto metrics = [&](std::vector<std::vector<std::vector<uint8_t>>>& cols, const MetricName* names, size_t count) {
    std::vector<flatbuffers::Offset<fb::Metric>> out;
    for (size_t m = 0; m < cols.size(); ++m) {
      std::vector<flatbuffers::Offset<fb::Column>> frames;
      for (auto& f : cols[m]) {
        frames.push_back(column(f, count));
        std::vector<uint8_t>().swap(f);
      }
      out.push_back(fb::CreateMetric(fbb, fbb.CreateString(names[m].name), fbb.CreateString(names[m].unit),
                                     fbb.CreateVector(frames)));
    }
    return fbb.CreateVector(out);
  };

  std::vector<uint8_t> tile_bytes;
  TileId prev = 0;
  for (TileId t : tiles_) put_varint(tile_bytes, t - prev), prev = t;
  auto tiles = column(tile_bytes, tiles_.size());
  auto pe_metrics = metrics(pe_cols_, kPeNames, tiles_.size());
  std::vector<fb::LinkRef> link_refs;
  for (const Link& l : wafer_.mesh().links()) link_refs.emplace_back(l.src, uint8_t(l.dir), uint8_t(l.kind));
  auto links = fbb.CreateVectorOfStructs(link_refs);
  auto link_metrics = metrics(link_cols_, kLinkNames, link_refs.size());
  auto colour_metrics = metrics(colour_cols_, kLinkNames, colour_prev_.size());
  std::vector<fb::LaneRef> lane_refs;
  for (const LaneRef& l : lanes_) lane_refs.emplace_back(l.tile, l.colour, l.tx);
  auto lanes = fbb.CreateVectorOfStructs(lane_refs);
  auto lane_metrics = metrics(lane_cols_, kLinkNames, lane_refs.size());
  std::vector<flatbuffers::Offset<fb::Series>> series = {
      fb::CreateSeries(fbb, fbb.CreateString("ingress_wavelets"), fbb.CreateString("wavelets"),
                       fbb.CreateVector(ingress_series_)),
      fb::CreateSeries(fbb, fbb.CreateString("egress_wavelets"), fbb.CreateString("wavelets"),
                       fbb.CreateVector(egress_series_))};
  auto series_vec = fbb.CreateVector(series);

  // Named SRAM buffers at the end of the run, one column per name, in name-id order.
  std::map<uint16_t, bool> name_ids;
  for (TileId t : tiles_)
    for (const SramAllocation& a : pes[t].sram.allocations()) name_ids[a.name] = true;
  std::vector<flatbuffers::Offset<fb::Metric>> buffers;
  for (const auto& [id, _] : name_ids) {
    std::vector<uint8_t> bytes;
    for (TileId t : tiles_) {
      const SramAllocation* a = pes[t].sram.find(id);
      put_varint(bytes, a ? a->bytes : 0);
    }
    std::vector<flatbuffers::Offset<fb::Column>> frames = {column(bytes, tiles_.size())};
    buffers.push_back(fb::CreateMetric(fbb, fbb.CreateString(wafer_.names().name(id)), fbb.CreateString("bytes"),
                                       fbb.CreateVector(frames)));
  }
  auto buffers_vec = fbb.CreateVector(buffers);
  auto machine = fbb.CreateString(wafer_.spec().name);
  auto layer = fbb.CreateString(meta_.layer);
  auto pass = fbb.CreateString(meta_.pass);
  auto starts = fbb.CreateVector(starts_);

  fb::ActivityDumpBuilder b(fbb);
  b.add_format_version(kFormatVersion);
  b.add_machine(machine);
  b.add_width(wafer_.shape().width);
  b.add_height(wafer_.shape().height);
  b.add_layer(layer);
  b.add_pass(pass);
  b.add_interval_cycles(interval_);
  b.add_start_cycle(start_);
  b.add_cycles(last_boundary_ - start_);
  b.add_interval_starts(starts);
  b.add_tiles(tiles);
  b.add_pe_metrics(pe_metrics);
  b.add_links(links);
  b.add_link_metrics(link_metrics);
  b.add_colours(uint32_t(colour_prev_.size()));
  b.add_colour_metrics(colour_metrics);
  b.add_series(series_vec);
  b.add_sram_buffers(buffers_vec);
  b.add_lanes(lanes);
  b.add_lane_metrics(lane_metrics);
  fb::FinishActivityDumpBuffer(fbb, b.Finish());
  dump_.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  pe_cols_.clear(), link_cols_.clear(), colour_cols_.clear(), lane_cols_.clear();
}

const std::vector<uint8_t>& ActivityRecorder::dump() {
  if (!finished_) finish();
  return dump_;
}

void ActivityRecorder::write(const std::filesystem::path& file) {
  const auto& bytes = dump();
  write_file_atomic(file, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "activity dump");
}

std::vector<StreamPhase> ActivityRecorder::stream_phases() const {
  std::vector<StreamPhase> phases;
  if (!ingress_first_ready_.empty()) {
    const Cycle first = *std::min_element(ingress_first_ready_.begin(), ingress_first_ready_.end());
    StreamPhase p{"ingress stream", "MemoryX", first > start_ ? first - start_ : 0, 0, 0};
    for (size_t k = 0; k < ingress_series_.size(); ++k) {
      p.wavelets += ingress_series_[k];
      if (ingress_series_[k]) p.end = k + 1 < starts_.size() ? starts_[k + 1] : last_boundary_ - start_;
    }
    if (p.end > p.start) phases.push_back(p);
  }
  // From what the samples saw (sample()), not from the ports, which a later run may have restarted.
  StreamPhase e{"egress stream", "host", 0, 0, 0};
  for (uint64_t w : egress_series_) e.wavelets += w;
  if (e.wavelets) {
    e.start = egress_first_ - start_, e.end = egress_end_ - start_;
    phases.push_back(e);
  }
  return phases;
}

}  // namespace wse
