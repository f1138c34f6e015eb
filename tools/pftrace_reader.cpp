#include "tools/pftrace_reader.hpp"

#include <algorithm>
#include <fstream>
#include <unordered_map>

#include "core/errors.hpp"
#include "io/input_file.hpp"
#include "tools/perfetto/perfetto_trace.pb.h"

namespace wse {

namespace pp = perfetto::protos;

namespace {

constexpr uint64_t kMaxPacketBytes = 64u << 20;
// What the slices still open may hold of names and arguments: each takes a copy of an interned
// name, so a trace of one long name begun thousands of times (a megabyte of file) held gigabytes.
// A trace `wse trace` writes holds a few slices open a track, of short names.
constexpr uint64_t kMaxOpenBytes = 64u << 20;

uint64_t held_bytes(const PftraceSlice& sl) {
  uint64_t b = sizeof sl + sl.name.size() + 8 * (sl.flows_out.size() + sl.flows_in.size());
  for (const PftraceArg& a : sl.args) b += sizeof a + a.name.size() + a.text.size();
  return b;
}

struct Sequence {
  bool cleared = false;                 // incremental state set up
  bool incremental = false;             // clock 64 declared, incremental
  uint32_t clock = 0;                   // default timestamp clock (TracePacketDefaults)
  uint64_t default_track = 0;
  uint64_t last = 0;                    // clock 64's value
  std::unordered_map<uint64_t, std::string> names, arg_names, arg_values;
};

struct OpenSlice {
  PftraceSlice slice;
};

}  // namespace

PftraceSummary read_pftrace(const std::filesystem::path& file, const PftraceCallbacks& cb) {
  std::error_code ec;
  check_regular_input(file, "trace " + file.string());
  const uint64_t size = std::filesystem::file_size(file, ec);
  std::ifstream in(file, std::ios::binary);
  if (!in || ec) throw UsageError("trace " + file.string() + ": cannot be opened");
  PftraceSummary sum;
  uint64_t offset = 0;
  auto fail = [&](const std::string& why) -> void {
    throw UsageError("trace " + file.string() + ": packet " + std::to_string(sum.packets) + " at byte " + std::to_string(offset) + ": " + why);
  };
  auto varint = [&](uint64_t& v, bool& eof) {
    v = 0;
    eof = false;
    for (int shift = 0;; shift += 7) {
      const int c = in.get();
      if (c == EOF) {
        if (shift == 0) return (void)(eof = true);
        fail("truncated (the file ends inside a packet header)");
      }
      ++sum.bytes;
      if (shift > 63) fail("malformed varint in a packet header");
      v |= uint64_t(c & 0x7f) << shift;
      if (!(c & 0x80)) return;
    }
  };

  std::unordered_map<uint32_t, Sequence> seqs;
  std::unordered_map<uint64_t, PftraceTrack> tracks;
  std::unordered_map<uint64_t, std::vector<PftraceSlice>> open;  // per track: the open slices
  uint64_t open_bytes = 0;                                       // what they hold (kMaxOpenBytes)
  pp::TracePacket p;
  std::string bytes;
  for (;;) {
    offset = sum.bytes;
    uint64_t tag = 0, len = 0;
    bool eof = false;
    varint(tag, eof);
    if (eof) break;
    if (tag != 0x0a)
      fail("not a Trace.packet field (tag " + std::to_string(tag) + "): not a Perfetto trace, or corrupt" +
           (file.extension() == ".json" ? " (a --format json trace? this wants the native trace.pftrace)" : ""));
    varint(len, eof);
    if (eof) fail("truncated (the file ends inside a packet header)");
    if (len > kMaxPacketBytes) fail("a packet of " + std::to_string(len) + " bytes (at most " + std::to_string(kMaxPacketBytes) + " expected)");
    if (len > size - std::min(size, sum.bytes)) fail("truncated (the file ends inside a packet)");
    bytes.resize(len);
    if (!in.read(bytes.data(), std::streamsize(len))) fail("truncated (the file ends inside a packet)");
    sum.bytes += len;
    if (!p.ParseFromString(bytes)) fail("does not parse as a TracePacket");
    ++sum.packets;

    const uint32_t sid = p.has_trusted_packet_sequence_id() ? p.trusted_packet_sequence_id() : 0;
    if (!sid) fail("no trusted_packet_sequence_id");
    auto [sit, new_seq] = seqs.try_emplace(sid);
    Sequence& s = sit->second;
    if (new_seq) ++sum.sequences;
    if (p.sequence_flags() & pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
      s = Sequence{};
      s.cleared = true;
    }
    if (!s.cleared) fail("sequence " + std::to_string(sid) + " used before its incremental state was cleared");
    if (p.has_trace_packet_defaults()) {
      const auto& d = p.trace_packet_defaults();
      s.clock = d.timestamp_clock_id();
      s.default_track = d.track_event_defaults().track_uuid();
    }
    if (p.has_interned_data()) {
      const auto& i = p.interned_data();
      for (const auto& n : i.event_names()) s.names[n.iid()] = n.name();
      for (const auto& n : i.debug_annotation_names()) s.arg_names[n.iid()] = n.name();
      for (const auto& n : i.debug_annotation_string_values()) s.arg_values[n.iid()] = n.str();
    }
    if (p.has_clock_snapshot()) {
      bool boot = false;
      for (const auto& c : p.clock_snapshot().clocks()) {
        if (c.clock_id() == pp::BUILTIN_CLOCK_BOOTTIME) boot = c.timestamp() == 0;
        if (c.clock_id() == 64) s.incremental = c.is_incremental(), s.last = c.timestamp();
      }
      if (!boot || !s.incremental) fail("a clock snapshot that does not pin clock 64 (incremental) to BOOTTIME 0");
      continue;
    }
    if (p.has_track_descriptor()) {
      const auto& t = p.track_descriptor();
      if (!t.uuid()) fail("a track descriptor without a uuid");
      if (t.parent_uuid() && !tracks.count(t.parent_uuid())) fail("track " + std::to_string(t.uuid()) + " names an undeclared parent");
      if (!tracks.try_emplace(t.uuid(), PftraceTrack{t.uuid(), t.parent_uuid(), t.name(), t.has_counter(), int(t.counter().unit()), t.description()}).second)
        fail("track " + std::to_string(t.uuid()) + " declared twice");
      ++sum.tracks;
      if (cb.track) cb.track(tracks[t.uuid()]);
      continue;
    }
    if (!p.has_track_event()) fail("a packet with neither a track event, a track descriptor nor a clock snapshot");
    const pp::TrackEvent& e = p.track_event();
    if (!p.has_timestamp()) fail("a track event without a timestamp");
    const uint32_t clock = p.has_timestamp_clock_id() ? p.timestamp_clock_id() : s.clock;
    if (clock != 64 || !s.incremental) fail("a track event whose timestamp is not on the sequence's incremental clock 64");
    if (p.timestamp() > (uint64_t(1) << 62) - std::min(s.last, uint64_t(1) << 62)) fail("a timestamp past 2^62 cycles");
    s.last += p.timestamp();
    const Cycle ts = s.last;
    const uint64_t track = e.has_track_uuid() ? e.track_uuid() : s.default_track;
    auto tit = tracks.find(track);
    if (tit == tracks.end()) fail("an event on undeclared track " + std::to_string(track));
    switch (e.type()) {
      case pp::TrackEvent::TYPE_SLICE_BEGIN: {
        if (tit->second.counter) fail("a slice on counter track '" + tit->second.name + "'");
        PftraceSlice sl;
        sl.track = track, sl.start = ts;
        if (e.has_name_iid()) {
          auto n = s.names.find(e.name_iid());
          if (n == s.names.end()) fail("event name iid " + std::to_string(e.name_iid()) + " is not interned on sequence " + std::to_string(sid));
          sl.name = n->second;
        } else {
          sl.name = e.name();
        }
        for (const auto& a : e.debug_annotations()) {
          PftraceArg arg;
          auto n = s.arg_names.find(a.name_iid());
          if (!a.has_name_iid() || n == s.arg_names.end()) fail("an argument name that is not interned");
          arg.name = n->second;
          if (a.has_uint_value()) arg.number = a.uint_value();
          else if (a.has_string_value_iid()) {
            auto v = s.arg_values.find(a.string_value_iid());
            if (v == s.arg_values.end()) fail("an argument string that is not interned");
            arg.text = v->second, arg.is_text = true;
          } else {
            fail("argument '" + arg.name + "' is neither a number nor an interned string");
          }
          sl.args.push_back(std::move(arg));
        }
        sl.flows_out.assign(e.flow_ids().begin(), e.flow_ids().end());
        sl.flows_in.assign(e.terminating_flow_ids().begin(), e.terminating_flow_ids().end());
        open_bytes += held_bytes(sl);
        if (open_bytes > kMaxOpenBytes)
          fail("slices begun and not yet ended hold more than " + std::to_string(kMaxOpenBytes >> 20) +
               " MiB of names and arguments (not a trace wse writes)");
        open[track].push_back(std::move(sl));
        break;
      }
      case pp::TrackEvent::TYPE_SLICE_END: {
        auto o = open.find(track);
        if (o == open.end() || o->second.empty()) fail("a slice end on track '" + tit->second.name + "' with no slice open");
        PftraceSlice sl = std::move(o->second.back());
        o->second.pop_back();
        open_bytes -= held_bytes(sl);
        if (ts < sl.start) fail("a slice that ends before it begins");
        sl.end = ts;
        ++sum.slices;
        if (cb.slice) cb.slice(sl);
        break;
      }
      case pp::TrackEvent::TYPE_COUNTER: {
        if (!tit->second.counter) fail("a counter point on slice track '" + tit->second.name + "'");
        PftraceCounter c{track, ts, e.has_double_counter_value() ? e.double_counter_value() : double(e.counter_value())};
        if (!e.has_counter_value() && !e.has_double_counter_value()) fail("a counter point without a value");
        ++sum.counter_points;
        if (cb.counter) cb.counter(c);
        break;
      }
      default: fail("a track event of type " + std::to_string(int(e.type())) + " (expected slice begin, end or counter)");
    }
  }
  for (const auto& [track, stack] : open)
    if (!stack.empty()) {
      offset = sum.bytes;
      fail("the trace ends with a slice open on track '" + tracks[track].name + "'");
    }
  return sum;
}

}  // namespace wse
