#include "host/viz_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/errors.hpp"
#include "host/progress.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include <optional>

#include "tools/dump_view.hpp"
#include "tools/pe_timelines.hpp"
#include "tools/trace_sink.hpp"
#include "tools/viz/viz.hpp"

namespace wse {

namespace {
// Bars of the PEs' timelines embedded in the page (a bar is about 25 bytes of JSON).
constexpr uint64_t kMaxTimelineBars = 2'000'000;
}  // namespace

int viz_command(const std::filesystem::path& dump, const OutputDirOptions& out_opt, const std::filesystem::path& out_dir,
                const std::string& metric, const std::filesystem::path& trace_arg, uint32_t max_frames) {
  const DumpView view = load_dump_view(dump);
  std::filesystem::path trace = trace_arg;
  if (trace.empty() && std::filesystem::exists(dump.parent_path() / "trace.pftrace")) trace = dump.parent_path() / "trace.pftrace";
  std::optional<PeTimelines> timelines;
  if (!trace.empty()) {
    const TraceInfo run{view.machine, view.layer, view.pass, std::to_string(view.width) + "x" + std::to_string(view.height),
                        view.interval_cycles, view.start_cycle};
    timelines = load_pe_timelines(trace, view.width, view.height, kMaxTimelineBars, run.describe());
    // The description matches any run of the same machine, layer, pass, mesh and interval: a
    // trace of another config (another GEMV size) was drawn as this dump's timelines, bars beyond
    // its last cycle. A bar outside the dump's cycles gives it away (both count from the run's
    // start, `start_cycle` on the wafer's clock).
    for (const auto& [pe, threads] : timelines->pes)
      for (const auto& [thread, bars] : threads)
        for (const TimelineBar& b : bars)
          if (b.end > view.cycles)
            throw UsageError("trace " + trace.string() + ": PE (" + std::to_string(pe.first) + "," + std::to_string(pe.second) +
                             ") has a slice over cycles [" + std::to_string(b.start) + ", " + std::to_string(b.end) +
                             "), beyond the dump's run, cycles [0, " + std::to_string(view.cycles) + "): a trace of another run; give the trace `wse trace` wrote with the dump");
  }
  OutputDirOptions opt_out = out_opt;
  opt_out.reads = {{dump, "the dump this run reads"}};
  if (!trace.empty()) opt_out.reads.push_back({trace, "the trace this run reads"});
  OutputDir out(out_dir, opt_out);
  viz::VizOptions opt;
  opt.metric = metric;
  opt.max_frames = max_frames;
  // On a terminal, a line redrawn at most five times a second: pictures drawn, ETA.
  const bool tty = isatty(fileno(stderr)) != 0;
  const Progress pace(1, 1);  // its clock and ETA; the count comes with each call
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  if (tty)
    opt.progress = [&](size_t done, size_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (done < total && now - last < std::chrono::milliseconds(200)) return;
      last = now;
      std::fprintf(stderr, "\r\033[K  drawing %zu of %zu pictures, ETA %s", done, total, pace.eta(done, total).c_str());
    };
  opt.out = &out;
  if (timelines) opt.timelines = &*timelines;
  viz::VizResult r;
  try {
    r = viz::write_viz(view, out_dir, opt);
  } catch (const OutputError&) {  // a picture that cannot be written is the output's fault, not the dump's
    if (tty) std::fprintf(stderr, "\r\033[K");
    throw;
  } catch (const UsageError& e) {
    if (tty) std::fprintf(stderr, "\r\033[K");
    throw UsageError("dump " + dump.string() + ": " + e.what());
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  std::printf("wse: viz of %s (mesh %ux%u, %zu intervals of %llu cycles)\n", dump.c_str(), view.width, view.height,
              view.interval_starts.size(), (unsigned long long)view.interval_cycles);
  std::printf("  metrics           %zu:", r.metrics.size());
  for (const auto& m : r.metrics) std::printf(" %s", m.c_str());
  std::printf("\n  heatmaps          %s/<metric>.png\n", out_dir.c_str());
  if (r.intervals_per_frame > 1)
    std::printf("  frames            %s/frames/<metric>_NNNN.png (%zu per metric, %zu intervals each%s: at most --max-frames)\n",
                out_dir.c_str(), r.frames, r.intervals_per_frame, view.interval_starts.size() % r.intervals_per_frame ? ", the last fewer" : "");
  else
    std::printf("  frames            %s/frames/<metric>_NNNN.png (%zu per metric)\n", out_dir.c_str(), r.frames);
  if (timelines)
    std::printf("  timelines         %zu PEs, %llu slices as %llu bars, from %s%s\n", timelines->pes.size(),
                (unsigned long long)timelines->slices, (unsigned long long)timelines->bars, trace.c_str(),
                timelines->truncated ? " (budget reached: later bars left out)" : "");
  std::printf("  viewer            %s/index.html%s\n", (out_dir).c_str(),
              r.html_block > 1 ? (" (downsampled: " + std::to_string(r.html_block) + "x" + std::to_string(r.html_block) +
                                  " PEs per cell)").c_str()
                               : "");
  return 0;
}

}  // namespace wse
