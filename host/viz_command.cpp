#include "host/viz_command.hpp"

#include <cstdio>

#include "core/errors.hpp"
#include "io/output_dir.hpp"
#include "tools/dump_view.hpp"
#include "tools/viz/viz.hpp"

namespace wse {

int viz_command(const std::filesystem::path& dump, const OutputDirOptions& out_opt, const std::filesystem::path& out_dir,
                const std::string& metric) {
  const DumpView view = load_dump_view(dump);
  OutputDir out(out_dir, out_opt);
  viz::VizOptions opt;
  opt.metric = metric;
  opt.out = &out;
  viz::VizResult r;
  try {
    r = viz::write_viz(view, out_dir, opt);
  } catch (const UsageError& e) {
    throw UsageError("dump " + dump.string() + ": " + e.what());
  }
  std::printf("wse: viz of %s (mesh %ux%u, %zu intervals of %llu cycles)\n", dump.c_str(), view.width, view.height,
              view.interval_starts.size(), (unsigned long long)view.interval_cycles);
  std::printf("  metrics           %zu:", r.metrics.size());
  for (const auto& m : r.metrics) std::printf(" %s", m.c_str());
  std::printf("\n  heatmaps          %s/<metric>.png\n", out_dir.c_str());
  std::printf("  frames            %s/frames/<metric>_NNNN.png (%zu per metric)\n", out_dir.c_str(),
              view.interval_starts.size());
  std::printf("  viewer            %s/index.html%s\n", (out_dir).c_str(),
              r.html_block > 1 ? (" (downsampled: " + std::to_string(r.html_block) + "x" + std::to_string(r.html_block) +
                                  " PEs per cell)").c_str()
                               : "");
  return 0;
}

}  // namespace wse
