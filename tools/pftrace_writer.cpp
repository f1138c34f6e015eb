#include "tools/pftrace_writer.hpp"

#include <cmath>

#include "tools/perfetto/perfetto_trace.pb.h"

namespace wse {

namespace pp = perfetto::protos;

namespace {

// Sequence 1 carries the track descriptors and the counters; slice tracks get 2, 3, ...
constexpr uint32_t kCounterSequence = 1;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

}  // namespace

PftraceWriter::PftraceWriter(const std::filesystem::path& file)
    : file_(file, "trace"), packet_(std::make_unique<pp::TracePacket>()) {
  buffer_.reserve(kBufferBytes + 4096);
}

PftraceWriter::~PftraceWriter() = default;

void PftraceWriter::emit(pp::TracePacket& p) {
  scratch_.clear();
  p.AppendToString(&scratch_);
  buffer_.push_back(char(0x0a));  // Trace.packet = 1, length-delimited
  put_varint(buffer_, scratch_.size());
  buffer_ += scratch_;
  if (buffer_.size() >= kBufferBytes) flush();
}

void PftraceWriter::flush() {
  file_.write(buffer_);
  written_ += buffer_.size();
  buffer_.clear();
}

uint32_t PftraceWriter::global_id(std::string_view s) {
  auto [it, added] = string_ids_.try_emplace(std::string(s), uint32_t(strings_.size()));
  if (added) strings_.emplace_back(s);
  return it->second;
}

uint64_t PftraceWriter::intern(std::vector<uint32_t>& table, std::string_view s, bool& added, uint32_t& gid) {
  gid = global_id(s);
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i] == gid) return i + 1;
  table.push_back(gid);
  added = true;
  return table.size();
}

PftraceWriter::Sequence& PftraceWriter::start_sequence(TrackId default_track) {
  Sequence& s = seqs_.emplace_back();
  s.id = uint32_t(seqs_.size());
  // One packet sets up the sequence: its incremental state starts here, its events name
  // `default_track` unless they say otherwise, and their timestamps are deltas on clock 64,
  // which this snapshot pins to BOOTTIME 0 (the trace's clock).
  pp::TracePacket& p = *packet_;
  p.Clear();
  p.set_trusted_packet_sequence_id(s.id);
  p.set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  p.set_first_packet_on_sequence(true);
  pp::TracePacketDefaults* d = p.mutable_trace_packet_defaults();
  d->set_timestamp_clock_id(kClock);
  if (default_track) d->mutable_track_event_defaults()->set_track_uuid(default_track);
  pp::ClockSnapshot* cs = p.mutable_clock_snapshot();
  pp::ClockSnapshot::Clock* boot = cs->add_clocks();
  boot->set_clock_id(pp::BUILTIN_CLOCK_BOOTTIME);
  boot->set_timestamp(0);
  pp::ClockSnapshot::Clock* inc = cs->add_clocks();
  inc->set_clock_id(kClock);
  inc->set_timestamp(0);
  inc->set_is_incremental(true);
  if (s.id == kCounterSequence) cs->set_primary_trace_clock(pp::BUILTIN_CLOCK_BOOTTIME);
  emit(p);
  return s;
}

void PftraceWriter::begin(const TraceInfo& info) {
  run_ = info.describe();
  if (info.scope) run_ += "; " + info.scope->text();  // what wse viz reads back (tools/pe_timelines.hpp)
  // The counter sequence first: it holds the trace's primary clock.
  counter_seq_ = start_sequence(0).id;
}

TrackId PftraceWriter::declare(TrackId parent, std::string_view name, int rank, bool group, const CounterUnit* unit) {
  tracks_.push_back({parent, 0, unit != nullptr, 0, false});
  const TrackId id = tracks_.size();
  pp::TracePacket& p = *packet_;
  p.Clear();
  p.set_trusted_packet_sequence_id(counter_seq_);
  pp::TrackDescriptor* t = p.mutable_track_descriptor();
  t->set_uuid(id);
  if (parent) t->set_parent_uuid(parent);
  t->set_name(std::string(name));
  if (!parent) t->set_description(run_);  // the UI shows it on the group; wse viz checks it
  t->set_sibling_order_rank(rank);
  if (group) t->set_child_ordering(pp::TrackDescriptor::EXPLICIT);
  if (unit) {
    pp::CounterDescriptor* c = t->mutable_counter();
    if (*unit == CounterUnit::Bytes) c->set_unit(pp::CounterDescriptor::UNIT_SIZE_BYTES);
    else if (*unit == CounterUnit::Count) c->set_unit(pp::CounterDescriptor::UNIT_COUNT);
  }
  emit(p);
  return id;
}

TrackId PftraceWriter::group(TrackId parent, std::string_view name, int rank) {
  return declare(parent, name, rank, true, nullptr);
}

TrackId PftraceWriter::slice_track(TrackId parent, std::string_view name, int rank) {
  return declare(parent, name, rank, true, nullptr);  // may get children (microthreads, counters)
}

TrackId PftraceWriter::counter_track(TrackId parent, std::string_view name, CounterUnit unit, int rank) {
  return declare(parent, name, rank, false, &unit);
}

void PftraceWriter::slice(TrackId track, Cycle start, Cycle end, std::string_view name, std::span<const TraceArg> args,
                          std::span<const uint64_t> flows_out, std::span<const uint64_t> flows_in) {
  Track& t = tracks_.at(track - 1);
  if (!t.seq) t.seq = start_sequence(track).id;
  Sequence& s = seqs_[t.seq - 1];
  if (start < s.last || end < start) throw std::logic_error("pftrace: slices out of order on a track");
  pp::TracePacket& p = *packet_;

  // BEGIN: the name and arguments, interned on this sequence (new entries go in this packet).
  p.Clear();
  p.set_trusted_packet_sequence_id(s.id);
  p.set_timestamp(start - s.last);
  s.last = start;
  pp::TrackEvent* e = p.mutable_track_event();
  e->set_type(pp::TrackEvent::TYPE_SLICE_BEGIN);
  bool added = false;
  uint32_t gid = 0;
  e->set_name_iid(intern(s.names, name, added, gid));
  if (added) {
    pp::EventName* n = p.mutable_interned_data()->add_event_names();
    n->set_iid(s.names.size());
    n->set_name(strings_[gid]);
  }
  for (const TraceArg& a : args) {
    pp::DebugAnnotation* d = e->add_debug_annotations();
    added = false;
    d->set_name_iid(intern(s.arg_names, a.name, added, gid));
    if (added) {
      pp::DebugAnnotationName* n = p.mutable_interned_data()->add_debug_annotation_names();
      n->set_iid(s.arg_names.size());
      n->set_name(strings_[gid]);
    }
    if (a.text.empty()) {
      d->set_uint_value(a.number);
    } else {
      added = false;
      d->set_string_value_iid(intern(s.arg_values, a.text, added, gid));
      if (added) {
        pp::InternedString* n = p.mutable_interned_data()->add_debug_annotation_string_values();
        n->set_iid(s.arg_values.size());
        n->set_str(strings_[gid]);
      }
    }
  }
  for (uint64_t f : flows_out) e->add_flow_ids(f);
  for (uint64_t f : flows_in) e->add_terminating_flow_ids(f);
  if (p.has_interned_data()) p.set_sequence_flags(pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  emit(p);

  // END: nothing but the time.
  p.Clear();
  p.set_trusted_packet_sequence_id(s.id);
  p.set_timestamp(end - s.last);
  s.last = end;
  p.mutable_track_event()->set_type(pp::TrackEvent::TYPE_SLICE_END);
  emit(p);
}

bool PftraceWriter::counter(TrackId track, Cycle at, double value) {
  Track& t = tracks_.at(track - 1);
  if (t.has_value && t.last_value == value) return false;  // holds until the next point
  Sequence& s = seqs_[counter_seq_ - 1];
  if (at < s.last) throw std::logic_error("pftrace: counter points out of order");
  t.has_value = true, t.last_value = value;
  pp::TracePacket& p = *packet_;
  p.Clear();
  p.set_trusted_packet_sequence_id(s.id);
  p.set_timestamp(at - s.last);
  s.last = at;
  pp::TrackEvent* e = p.mutable_track_event();
  e->set_type(pp::TrackEvent::TYPE_COUNTER);
  e->set_track_uuid(track);
  if (value == std::floor(value) && std::fabs(value) < 9e15) e->set_counter_value(int64_t(value));
  else e->set_double_counter_value(value);
  emit(p);
  return true;
}

void PftraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  flush();
  file_.commit();
}

}  // namespace wse
