#include "tools/json_trace_writer.hpp"
#include "io/json_text.hpp"

#include <nlohmann/json.hpp>

namespace wse {

JsonTraceWriter::JsonTraceWriter(const std::filesystem::path& file) : file_(file, "trace") {
  buffer_.reserve(kBufferBytes + 4096);
}

void JsonTraceWriter::flush() {
  file_.write(buffer_);
  written_ += buffer_.size();
  buffer_.clear();
}

void JsonTraceWriter::event(const std::string& json) {
  buffer_ += first_ ? "\n" : ",\n";
  first_ = false;
  buffer_ += json;
  if (buffer_.size() >= kBufferBytes) flush();
}

void JsonTraceWriter::begin(const TraceInfo& info) {
  info_ = info;
  buffer_ += "{\"displayTimeUnit\":\"ns\",\"otherData\":";
  buffer_ += json_text(nlohmann::json{{"machine", info.machine},
                            {"layer", info.layer},
                            {"pass", info.pass},
                            {"mesh", info.mesh},
                            {"interval_cycles", info.interval_cycles},
                            {"start_cycle", info.start_cycle},
                            {"wafers", info.wafers},
                            {"description", info.describe()},
                            {"time_unit", "1 us in the viewer = 1 fabric cycle"}});
  buffer_ += ",\"traceEvents\":[";
}

TrackId JsonTraceWriter::add(TrackId parent, std::string_view name) {
  Track t;
  t.parent = parent;
  if (!parent) {
    t.pid = next_pid_++;
  } else {
    const Track& p = tracks_.at(parent - 1);
    t.pid = p.pid;
    t.name = p.name.empty() ? std::string(name) : p.name + " " + std::string(name);
  }
  tracks_.push_back(std::move(t));
  return tracks_.size();
}

TrackId JsonTraceWriter::group(TrackId parent, std::string_view name, int rank) {
  const TrackId id = add(parent, name);
  if (!parent) {
    const Track& t = tracks_.back();
    event(json_text(nlohmann::json{{"name", "process_name"}, {"ph", "M"}, {"pid", t.pid}, {"args", {{"name", name}}}}));
    event(json_text(nlohmann::json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", t.pid}, {"args", {{"sort_index", rank}}}}));
  } else if (name.rfind("row", 0) == 0) {
    tracks_.back().name = tracks_[parent - 1].name;  // row groups add nothing to names: "PE (x,y)" says where it is
  }
  return id;
}

TrackId JsonTraceWriter::slice_track(TrackId parent, std::string_view name, int rank) {
  const TrackId id = add(parent, name);
  Track& t = tracks_.back();
  t.tid = next_tid_++;
  if (!parent) {
    // A track of its own at the top (the cluster trace's critical path): a process named for it,
    // as the native trace names the track (its thread was an unnamed "Process N").
    t.name = std::string(name);
    event(json_text(nlohmann::json{{"name", "process_name"}, {"ph", "M"}, {"pid", t.pid}, {"args", {{"name", name}}}}));
    event(json_text(nlohmann::json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", t.pid}, {"args", {{"sort_index", rank}}}}));
  }
  event(json_text(nlohmann::json{{"name", "thread_name"}, {"ph", "M"}, {"pid", t.pid}, {"tid", t.tid}, {"args", {{"name", t.name}}}}));
  event(json_text(nlohmann::json{{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", t.pid}, {"tid", t.tid}, {"args", {{"sort_index", t.tid}}}}));
  return id;
}

TrackId JsonTraceWriter::counter_track(TrackId parent, std::string_view name, CounterUnit unit, int) {
  const TrackId id = add(parent, name);
  Track& t = tracks_.back();
  if (!parent) t.name = std::string(name);
  t.label = unit == CounterUnit::Bytes ? "bytes" : unit == CounterUnit::Ratio ? "ratio" : "value";
  return id;
}

void JsonTraceWriter::slice(TrackId track, Cycle start, Cycle end, std::string_view name, std::span<const TraceArg> args,
                            std::span<const uint64_t> flows_out, std::span<const uint64_t> flows_in) {
  const Track& t = tracks_.at(track - 1);
  nlohmann::json a = nlohmann::json::object();
  for (const TraceArg& x : args) {
    if (x.text.empty()) a[std::string(x.name)] = x.number;
    else a[std::string(x.name)] = x.text;
  }
  nlohmann::json e = {{"name", name}, {"ph", "X"}, {"pid", t.pid}, {"tid", t.tid}, {"ts", start}, {"dur", end - start}};
  if (!a.empty()) e["args"] = std::move(a);
  event(json_text(e));
  // Flow events bind to the enclosing slice: "s" starts a flow, "f" (with bp "e") ends one.
  for (uint64_t f : flows_out)
    event(json_text(nlohmann::json{{"name", "flow"}, {"cat", "flow"}, {"ph", "s"}, {"id", f}, {"pid", t.pid}, {"tid", t.tid}, {"ts", start}}));
  for (uint64_t f : flows_in)
    event(json_text(nlohmann::json{{"name", "flow"}, {"cat", "flow"}, {"ph", "f"}, {"bp", "e"}, {"id", f}, {"pid", t.pid}, {"tid", t.tid}, {"ts", start}}));
}

bool JsonTraceWriter::counter(TrackId track, Cycle at, double value) {
  Track& t = tracks_.at(track - 1);
  if (t.has_value && t.last_value == value) return false;  // holds until the next point, as in the native trace
  t.has_value = true, t.last_value = value;
  nlohmann::json v = value == double(uint64_t(value)) ? nlohmann::json(uint64_t(value)) : nlohmann::json(value);
  event(json_text(nlohmann::json{{"name", t.name}, {"ph", "C"}, {"pid", t.pid}, {"tid", 0}, {"ts", at}, {"args", {{t.label, v}}}}));
  return true;
}

void JsonTraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  buffer_ += "\n]}\n";
  flush();
  file_.commit();
}

}  // namespace wse
