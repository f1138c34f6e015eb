// libFuzzer target: an IDX image/label pair (plain or gzipped) through inspect_idx_files and
// load_idx_files. The input is split in two: its first two bytes give the length of the image
// file (little-endian, capped at what is left); the rest is the label file.
#include "fuzz_support.hpp"
#include "host/dataset.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t split = std::min<size_t>(size_t(data[0]) | size_t(data[1]) << 8, size - 2);
  const auto images = wse::fuzz::write("images-idx3-ubyte", data + 2, split);
  const auto labels = wse::fuzz::write("labels-idx1-ubyte", data + 2 + split, size - 2 - split);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    const wse::IdxInfo info = wse::inspect_idx_files(images, labels);
    const wse::Dataset d = wse::load_idx_files(images, labels, 0, "fuzz");
    if (d.count != info.count || d.images.size() != size_t(d.count) * d.features) std::abort();
    if (info.count >= 1) wse::load_idx_files(images, labels, 1, "fuzz");
  });
}
