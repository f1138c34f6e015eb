#pragma once
// A TraceSink writing Chrome trace-event JSON (`wse trace --format json`): what chrome://tracing
// and ui.perfetto.dev read, about five times larger than the native format, so meant for small
// traces. Streamed like the native writer: events go to the file through a fixed buffer as they
// arrive. Top-level groups become processes, slice tracks threads (named by their path below the
// process, rows left out: "PE (x,y) ut0"), counter tracks "C" events; 1 us in the viewer = 1
// fabric cycle.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/output_file.hpp"
#include "tools/trace_sink.hpp"

namespace wse {

class JsonTraceWriter : public TraceSink {
 public:
  static constexpr size_t kBufferBytes = 1 << 20;

  explicit JsonTraceWriter(const std::filesystem::path& file);
  ~JsonTraceWriter() override = default;

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
  struct Track {
    TrackId parent = 0;
    int pid = 0, tid = 0;
    std::string name;   // for counters: the full name; for slice tracks and groups: the path below the process
    std::string label;  // what the argument key of a counter is (its unit)
    bool has_value = false;
    double last_value = 0;
  };
  TrackId add(TrackId parent, std::string_view name);
  void event(const std::string& json);
  void flush();

  OutputFile file_;
  std::string buffer_;
  uint64_t written_ = 0;
  std::vector<Track> tracks_;
  int next_pid_ = 1, next_tid_ = 1;
  bool first_ = true, finished_ = false;
  TraceInfo info_;
};

}  // namespace wse
