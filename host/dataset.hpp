#pragma once
// Image classification data from IDX files (MNIST, Fashion-MNIST), plain or gzipped.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace wse {

struct Dataset {
  uint32_t count = 0, features = 0;
  std::vector<float> images;   // count x features, pixels scaled to [0, 1]
  std::vector<uint8_t> labels;
};

// Reads <dir>/<prefix>-images-idx3-ubyte[.gz] and <prefix>-labels-idx1-ubyte[.gz], at most
// `limit` samples (0 = all). Throws UsageError naming the file when it is missing or malformed.
Dataset load_idx_dataset(const std::filesystem::path& dir, const std::string& prefix, uint32_t limit);

}  // namespace wse
