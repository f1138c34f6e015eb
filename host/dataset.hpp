#pragma once
// Image classification data from IDX files (MNIST, Fashion-MNIST), plain or gzipped. Headers are
// checked up front against the file's length (for a gzipped file, against the uncompressed size
// its trailer records) before any pixel is read or any memory is taken for them.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wse {

struct Dataset {
  uint32_t count = 0, features = 0;
  std::vector<float> images;   // count x features, pixels scaled to [0, 1]
  std::vector<uint8_t> labels;
};

// What a pair of IDX files holds, from their headers.
struct IdxInfo {
  std::filesystem::path images, labels;
  uint32_t count = 0, rows = 0, cols = 0;
  uint32_t features() const { return rows * cols; }
};

// <dir>/<prefix>-images-idx3-ubyte[.gz] and <prefix>-labels-idx1-ubyte[.gz]: found, headers read
// and checked. Throws UsageError naming the file, the field and what was expected.
IdxInfo inspect_idx_dataset(const std::filesystem::path& dir, const std::string& prefix);
IdxInfo inspect_idx_files(const std::filesystem::path& images, const std::filesystem::path& labels);

// Throws UsageError when `limit` samples are asked for (0 = all) and the files hold fewer: a
// config asking for more than there is must not quietly train on less. `asked_by` names who asked
// ("config X: field 'data.train_samples'").
void check_sample_count(const IdxInfo& info, uint32_t limit, const std::string& asked_by);

// Reads the first `limit` samples (0 = all); fewer in the files is an error (check_sample_count).
// Throws UsageError naming the file when it is missing or malformed (a label outside 0-9 included).
Dataset load_idx_dataset(const std::filesystem::path& dir, const std::string& prefix, uint32_t limit, const std::string& asked_by);
Dataset load_idx_files(const std::filesystem::path& images, const std::filesystem::path& labels, uint32_t limit,
                       const std::string& asked_by);
// The same for files whose headers inspect_idx_files() has read and checked already (a gzipped
// file whose trailer disagrees is decompressed whole to check it: not twice).
Dataset load_idx_files(const IdxInfo& info, uint32_t limit, const std::string& asked_by);

}  // namespace wse
