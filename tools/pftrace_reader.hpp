#pragma once
// Reads a native Perfetto trace of the kind `wse trace` writes (tools/pftrace_writer.hpp) back,
// one packet at a time, checking it as it goes: every packet parses as a TracePacket, names and
// arguments resolve through the sequence's interned data, timestamps resolve through the
// sequence's clock, every event names a declared track of the right kind, and every slice that
// begins on a track ends there. Used by `wse viz` (task timelines for the viewer) and the tests.
// Memory: one packet and the open slices, whatever the file's size.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

struct PftraceTrack {
  uint64_t uuid = 0, parent = 0;
  std::string name;
  bool counter = false;
  int unit = 0;  // CounterDescriptor::Unit
  std::string description;
};

struct PftraceArg {
  std::string name;
  uint64_t number = 0;
  std::string text;  // set for a string argument
  bool is_text = false;
};

struct PftraceSlice {
  uint64_t track = 0;
  Cycle start = 0, end = 0;
  std::string name;
  std::vector<PftraceArg> args;
  std::vector<uint64_t> flows_out, flows_in;
  const PftraceArg* arg(const std::string& n) const {
    for (const auto& a : args)
      if (a.name == n) return &a;
    return nullptr;
  }
};

struct PftraceCounter {
  uint64_t track = 0;
  Cycle at = 0;
  double value = 0;
};

struct PftraceCallbacks {
  std::function<void(const PftraceTrack&)> track;
  std::function<void(const PftraceSlice&)> slice;  // when the slice ends
  std::function<void(const PftraceCounter&)> counter;
};

struct PftraceSummary {
  uint64_t packets = 0, bytes = 0, sequences = 0, tracks = 0, slices = 0, counter_points = 0;
};

// Throws UsageError "trace FILE: packet N at byte B: ..." on anything malformed.
PftraceSummary read_pftrace(const std::filesystem::path& file, const PftraceCallbacks& cb);

}  // namespace wse
