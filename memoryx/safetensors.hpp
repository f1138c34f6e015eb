#pragma once
// Checkpoints in the safetensors format: 8-byte little-endian header length, a JSON header
// ({name: {dtype, shape, data_offsets}, "__metadata__": {...}}), then raw little-endian data.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "memoryx/tensor.hpp"

namespace wse {

struct Checkpoint {
  std::vector<Tensor> tensors;                   // written in this order
  std::map<std::string, std::string> metadata;   // string -> string, as the format requires
  const Tensor* find(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

// Writes atomically (to a temporary file, then renamed): an interrupted write never leaves a
// truncated checkpoint under the final name.
void write_safetensors(const std::filesystem::path& path, const Checkpoint& ckpt);
// Throws UsageError naming the file on anything malformed (only F32 tensors are supported).
Checkpoint read_safetensors(const std::filesystem::path& path);

}  // namespace wse
