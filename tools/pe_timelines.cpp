#include "tools/pe_timelines.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/errors.hpp"
#include "core/shown.hpp"
#include "tools/pftrace_reader.hpp"

namespace wse {

namespace {

// TraceScope::text() read back; nothing for any other text.
std::optional<TraceScope> parse_scope(const std::string& text) {
  TraceScope sc;
  unsigned long long x0 = 0, y0 = 0, x1 = 0, y1 = 0, from = 0, to = 0;
  unsigned slices = 0;
  int used = 0;
  char to_text[24] = {};
  if (std::sscanf(text.c_str(), "scope pes %llu,%llu,%llu,%llu cycles %llu,%23[0-9end] pe_slices %u%n", &x0, &y0, &x1, &y1, &from,
                  to_text, &slices, &used) != 7 ||
      size_t(used) != text.size() || slices > 1 || x0 > x1 || y0 > y1 || x1 > UINT32_MAX || y1 > UINT32_MAX)
    return std::nullopt;
  if (std::string(to_text) == "end") to = kNever;
  else if (std::sscanf(to_text, "%llu", &to) != 1) return std::nullopt;
  sc.x0 = uint32_t(x0), sc.y0 = uint32_t(y0), sc.x1 = uint32_t(x1), sc.y1 = uint32_t(y1);
  sc.from = from, sc.to = to, sc.pe_slices = slices == 1;
  return sc;
}

}  // namespace

PeTimelines load_pe_timelines(const std::filesystem::path& trace, uint32_t width, uint32_t height, uint64_t max_bars,
                              const std::string& run) {
  PeTimelines t;
  struct Where {
    bool pe = false;
    uint32_t x = 0, y = 0, thread = 0;
  };
  std::unordered_map<uint64_t, Where> where;  // track -> PE and thread (only PE slice tracks)
  std::unordered_map<std::string, uint32_t> name_ids;
  const PftraceSummary sum = read_pftrace(trace, {[&](const PftraceTrack& tr) {
                         // A trace of the same mesh size but another run (another layer, config or
                         // step) names only PEs of the mesh: only its description tells.
                         std::string said = tr.description;
                         if (!tr.parent && said.size() > run.size() && said.compare(0, run.size() + 2, run + "; ") == 0) {
                           t.scope = parse_scope(said.substr(run.size() + 2));
                           if (!t.scope) throw UsageError("trace " + trace.string() + ": track '" + shown(tr.name) + "' has a scope that does not read: " + shown(said));
                           said = run;
                         }
                         if (!tr.parent && said.find(" across the cluster's actors") != std::string::npos)
                           throw UsageError("trace " + trace.string() + ": the cluster trace (the " + shown(tr.description) +
                                            "), which has no PE timelines; give the layer's trace, trace.pftrace (trace.json) beside the dump");
                         if (!tr.parent && !said.empty() && said != run)
                           throw UsageError("trace " + trace.string() + ": track '" + shown(tr.name) + "' says it is the " + shown(tr.description) +
                                            ", but the dump is of another run (its trace would be the " + shown(run) +
                                            "); give the trace `wse trace` wrote with the dump");
                         Where w;
                         unsigned x = 0, y = 0, k = 0;
                         char tail = 0;
                         if (std::sscanf(tr.name.c_str(), "PE (%u,%u)%c", &x, &y, &tail) == 2 && !tr.counter) {
                           if (x >= width || y >= height)
                             throw UsageError("trace " + trace.string() + ": track '" + shown(tr.name) + "' names a PE outside the " +
                                              std::to_string(width) + "x" + std::to_string(height) + " mesh of the dump (a trace of another run?)");
                           w = {true, x, y, 0};
                         } else if (std::sscanf(tr.name.c_str(), "ut%u%c", &k, &tail) == 1 && !tr.counter) {
                           auto p = where.find(tr.parent);
                           if (p != where.end() && p->second.pe) w = {true, p->second.x, p->second.y, k + 1};
                         }
                         where[tr.uuid] = w;
                       },
                       [&](const PftraceSlice& s) {
                         auto w = where.find(s.track);
                         if (w == where.end() || !w->second.pe) return;
                         ++t.slices;
                         auto [it, added] = name_ids.try_emplace(s.name, uint32_t(t.names.size()));
                         if (added) t.names.push_back(s.name);
                         auto& bars = t.pes[{w->second.x, w->second.y}][w->second.thread];
                         if (!bars.empty() && bars.back().name == it->second && bars.back().end == s.start) {
                           bars.back().end = s.end;
                           ++bars.back().count;
                           return;
                         }
                         if (t.bars >= max_bars) {
                           t.truncated = true;
                           t.complete_until = std::min(t.complete_until, s.start);
                           return;
                         }
                         bars.push_back({s.start, s.end, it->second, 1});
                         ++t.bars;
                       },
                       {}});
  // An empty file reads as a trace of nothing (valid Perfetto), but is never what `wse trace` wrote.
  if (sum.packets == 0) throw UsageError("trace " + trace.string() + ": empty (no packets); give the trace `wse trace` wrote with the dump");
  return t;
}

}  // namespace wse
