#pragma once
// `wse inspect FILE`: what a WeightStream (.wsws) or GradientStream (.wsgs) message holds, read
// through the FlatBuffers verifier.
#include <filesystem>

namespace wse {

int inspect_stream_file(const std::filesystem::path& path);

}  // namespace wse
