#include "host/inspect_command.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "cluster/step_plan.hpp"
#include "core/errors.hpp"
#include "core/shown.hpp"
#include "io/input_file.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

namespace {

// A stream's step as the training log, checkpoints and spans count it (from 1; evaluation
// batches by their own count), and the field as stored (from 0): "step 0" was step 1 to
// every other output (a review, forty-fifth round).
std::string shown_step(uint64_t step) { return step_label(step) + " (field 'step' " + std::to_string(step) + ")"; }

}  // namespace

int inspect_stream_file(const std::filesystem::path& path) {
  const std::string what = path.string();
  const auto neither = [&](const std::string& why) {
    return UsageError(what + ": neither a WeightStream (.wsws) nor a GradientStream (.wsgs): " + why);
  };
  // Its identifier first: a file that is no stream is told so from its first 8 bytes, not after
  // being read whole (a 1.5 GB file of zeros took 7 s and 1.5 GB: a CLI audit, forty-sixth round).
  {
    std::error_code ec;
    char head[8];
    // (Its type first: opening a pipe to read blocks until a writer comes: a review, forty-sixth round.)
    std::ifstream in;
    if (std::filesystem::is_regular_file(path, ec)) in.open(path, std::ios::binary);
    if (in.is_open() && in.read(head, 8)) {
      const std::string id(head + 4, head + 8);
      if (id != "WSGS" && id != "WSWS")
        throw neither("no WSWS or WSGS file identifier at bytes 4-7 of its " + std::to_string(std::filesystem::file_size(path, ec)) + " bytes");
    }
  }
  const Buffer bytes = read_input_file(path, "stream", uint64_t(1) << 31);  // a FlatBuffer is at most 2 GiB
  // A FlatBuffer's file identifier is its bytes 4 to 7: which of the two this file is, whatever
  // its name says; a file that is neither is not blamed on one of them.
  const std::string id = bytes.size() >= 8 ? std::string(bytes.begin() + 4, bytes.begin() + 8) : std::string();
  if (id != "WSGS" && id != "WSWS")
    throw neither(bytes.size() < 8 ? std::to_string(bytes.size()) + " bytes, too short for a FlatBuffer"
                                   : "no WSWS or WSGS file identifier at bytes 4-7 of its " + std::to_string(bytes.size()) + " bytes");
  if (id == "WSGS") {
    GradientMessage g = decode_gradient_stream(bytes, what);
    std::printf("GradientStream %s: layer %s (#%u) %s wafer %u, ", what.c_str(), shown(g.layer).c_str(), g.layer_index,
                shown_step(g.step).c_str(), g.wafer);
    if (g.sparse)
      std::printf("sparse: %zu values at their positions in a %u x %u matrix\n", g.values.size(), g.rows, g.cols);
    else
      std::printf("%u x %u values\n", g.rows, g.cols);
    return 0;
  }
  DecodedStream d = decode_weight_stream(bytes, what);
  std::printf("WeightStream %s: layer %s (#%u) %s, %s pass, %s, %u x %u matrix, column %u holds rows [%u, %u), "
              "%u weights in %zu words (+1 header)\n",
              what.c_str(), shown(d.layer).c_str(), d.layer_index, shown_step(d.step).c_str(),
              d.pass == StreamPass::Forward ? "forward" : "backward", encoding_name(d.encoding), d.rows, d.cols, d.column,
              d.slice_begin, d.slice_end, d.weights, d.words.size() - 1);
  return 0;
}

}  // namespace wse
