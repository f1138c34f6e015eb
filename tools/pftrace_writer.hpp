#pragma once
// A TraceSink writing Perfetto's native trace format (a `.pftrace`: a Trace message, i.e. a run
// of length-delimited TracePackets, tools/perfetto/perfetto_trace.proto) through libprotobuf,
// streamed to the file through a fixed buffer.
//
// How it stays small (a slice is about 23 bytes against ~120 in JSON):
// - every slice track is its own packet sequence, whose TracePacketDefaults name the track and an
//   incremental clock (a sequence-scoped clock 64 declared in a ClockSnapshot): an event packet
//   holds no track id, and its timestamp is the delta from the sequence's previous event;
// - slice names and argument names are interned per sequence (EventName, DebugAnnotationName);
// - counter points go on one sequence with its own incremental clock, and only when a value
//   changes (a counter holds its value until the next point).
// 1 cycle = 1 ns on the trace's clock (BOOTTIME, from 0 at the start of the recording).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/output_file.hpp"
#include "tools/trace_sink.hpp"

namespace perfetto::protos {
class TracePacket;
}

namespace wse {

class PftraceWriter : public TraceSink {
 public:
  static constexpr size_t kBufferBytes = 1 << 20;

  explicit PftraceWriter(const std::filesystem::path& file);
  ~PftraceWriter() override;

  void begin(const TraceInfo& info) override;
  TrackId group(TrackId parent, std::string_view name, int rank) override;
  TrackId slice_track(TrackId parent, std::string_view name, int rank) override;
  TrackId counter_track(TrackId parent, std::string_view name, CounterUnit unit, int rank) override;
  void slice(TrackId track, Cycle start, Cycle end, std::string_view name, std::span<const TraceArg> args,
             std::span<const uint64_t> flows_out, std::span<const uint64_t> flows_in) override;
  bool counter(TrackId track, Cycle at, double value) override;
  void finish() override;
  uint64_t bytes_written() const override { return written_ + buffer_.size(); }

 private:
  static constexpr uint32_t kClock = 64;  // the sequence-scoped incremental clock
  // A packet sequence: its clock and interned strings (iid = index + 1, values are global ids).
  struct Sequence {
    uint32_t id = 0;
    Cycle last = 0;  // the incremental clock's value
    std::vector<uint32_t> names, arg_names, arg_values;
  };
  struct Track {
    TrackId parent = 0;
    uint32_t seq = 0;  // the slice track's sequence (0: not started yet)
    bool counter = false;
    double last_value = 0;
    bool has_value = false;
  };
  TrackId declare(TrackId parent, std::string_view name, int rank, bool group, const CounterUnit* unit);
  Sequence& start_sequence(TrackId default_track);
  uint32_t global_id(std::string_view s);
  // The iid of `s` in `table`, adding it (and its definition to `add`) if new.
  uint64_t intern(std::vector<uint32_t>& table, std::string_view s, bool& added, uint32_t& gid);
  void emit(perfetto::protos::TracePacket& p);
  void flush();

  OutputFile file_;
  std::string buffer_;
  uint64_t written_ = 0;
  std::vector<Track> tracks_;  // index = TrackId - 1
  std::vector<Sequence> seqs_;  // index = sequence id - 1
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::string> strings_;
  uint32_t counter_seq_ = 0;
  std::unique_ptr<perfetto::protos::TracePacket> packet_;  // reused
  std::string scratch_;
  bool finished_ = false;
  std::string run_;  // TraceInfo::describe() (and its scope), the description of every top-level track
};

}  // namespace wse
