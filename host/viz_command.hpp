#pragma once
// `wse viz DUMP --out DIR [--metric NAME]`: PNG heatmaps, animation frames and the HTML viewer of
// an activity dump (see docs/visualization.md).
#include <filesystem>
#include <string>

#include "io/output_dir.hpp"

namespace wse {

// Reads the dump through the verifier, checks DIR (io/output_dir.hpp), and writes DIR/<metric>.png, DIR/frames/<metric>_NNNN.png and
// DIR/index.html; prints what it wrote. Throws wse::UsageError (naming the dump) on a bad dump or
// an unknown metric.
int viz_command(const std::filesystem::path& dump, const OutputDirOptions& out_opt, const std::filesystem::path& out_dir,
                const std::string& metric);

}  // namespace wse
