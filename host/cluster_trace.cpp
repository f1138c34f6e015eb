#include "host/cluster_trace.hpp"

#include <algorithm>
#include <vector>

namespace wse {

namespace {

struct Item {
  std::string what;
  Cycle start = 0, end = 0;
  Cycle cycles = 0;  // its length in the timeline (end is at least start + 1, to be drawn)
};

}  // namespace

ClusterTraceStats write_cluster_trace(TraceSink& sink, const nlohmann::json& tl, const std::string& machine, const std::string& mesh,
                                      uint32_t wafers) {
  ClusterTraceStats stats;
  const Cycle origin = tl.at("start").get<Cycle>();
  const std::string step = "step " + std::to_string(tl.at("step").get<uint64_t>());
  sink.begin({machine, step, "cluster", mesh, 0, origin, wafers});
  // A zero-length span (a control message handled at once) still shows as one cycle, but its
  // `cycles` arg is its own length (0), as the report's timeline has it.
  auto rel = [&](Cycle c) { return c > origin ? c - origin : 0; };

  const TrackId path_track = sink.slice_track(0, "critical path (" + std::to_string(tl.at("cycles").get<uint64_t>()) + " cycles)", 0);
  for (const auto& s : tl.at("critical_path")) {
    const Cycle a = rel(s.at("from").get<Cycle>()), b = rel(s.at("to").get<Cycle>());
    if (b <= a) continue;
    const std::string name = s.at("actor").get<std::string>() + ": " + s.at("what").get<std::string>();
    const TraceArg args[] = {{"cycles", b - a, {}}};
    sink.slice(path_track, a, b, name, args);
    ++stats.slices;
  }

  int rank = 1;
  for (const auto& [actor, spans] : tl.at("spans").items()) {
    std::vector<Item> items;
    for (const auto& s : spans) {
      Item it{s.at(0).get<std::string>(), rel(s.at(1).get<Cycle>()), rel(s.at(2).get<Cycle>())};
      it.cycles = it.end > it.start ? it.end - it.start : 0;
      it.end = std::max(it.end, it.start + 1);
      items.push_back(std::move(it));
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.start < b.start || (a.start == b.start && a.end < b.end); });
    // Lanes: each span on the first lane free at its start (slices on one track never overlap).
    const TrackId group = sink.group(0, actor, rank++);
    std::vector<std::pair<TrackId, Cycle>> lanes;  // track, end of its last slice
    for (const Item& it : items) {
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane].second > it.start) ++lane;
      if (lane == lanes.size())
        lanes.push_back({sink.slice_track(group, lane == 0 ? actor : actor + " (" + std::to_string(lane + 1) + ")", int(lane)), 0});
      const TraceArg args[] = {{"cycles", it.cycles, {}}};
      sink.slice(lanes[lane].first, it.start, it.end, it.what, args);
      lanes[lane].second = it.end;
      ++stats.slices;
    }
    ++stats.actors;
  }
  sink.finish();
  return stats;
}

}  // namespace wse
