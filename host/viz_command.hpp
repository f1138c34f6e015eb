#pragma once
// `wse viz DUMP --out DIR [--metric NAME] [--trace FILE]`: PNG heatmaps, animation frames and the
// HTML viewer of an activity dump, with the PEs' task timelines from the native trace beside it
// (see docs/visualization.md).
#include <cstdint>
#include <filesystem>
#include <string>

#include "io/output_dir.hpp"

namespace wse {

// Reads the dump through the verifier, checks DIR (io/output_dir.hpp), and writes DIR/<metric>.png, DIR/frames/<metric>_NNNN.png and
// DIR/index.html; prints what it wrote. Throws wse::UsageError (naming the dump) on a bad dump or
// an unknown metric.
// `trace`: the native trace for the viewer's timelines; empty = DUMP's folder/trace.pftrace if it
// exists (a trace.json beside it is not read). `max_frames`: frames a metric at most (viz::VizOptions).
int viz_command(const std::filesystem::path& dump, const OutputDirOptions& out_opt, const std::filesystem::path& out_dir,
                const std::string& metric, const std::filesystem::path& trace = {}, uint32_t max_frames = 1000);

}  // namespace wse
