#include "host/dataset.hpp"

#include <zlib.h>

#include <memory>

#include "fabric/errors.hpp"

namespace wse {

namespace {

std::filesystem::path find(const std::filesystem::path& dir, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"})
    if (std::filesystem::exists(dir / candidate)) return dir / candidate;
  throw UsageError("dataset file " + (dir / name).string() + "[.gz] not found (Debian: apt-get install dataset-fashion-mnist)");
}

// gzread reads plain files too.
struct Reader {
  std::filesystem::path path;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f{nullptr, gzclose};
  explicit Reader(std::filesystem::path p) : path(std::move(p)), f(gzopen(path.c_str(), "rb"), gzclose) {
    if (!f) throw UsageError("dataset file " + path.string() + ": cannot open");
  }
  void read(void* out, size_t n) {
    if (gzread(f.get(), out, unsigned(n)) != int(n)) throw UsageError("dataset file " + path.string() + ": truncated or not gzip/IDX");
  }
  uint32_t be32() {
    uint8_t b[4];
    read(b, 4);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  }
};

}  // namespace

Dataset load_idx_dataset(const std::filesystem::path& dir, const std::string& prefix, uint32_t limit) {
  Reader img(find(dir, prefix + "-images-idx3-ubyte")), lab(find(dir, prefix + "-labels-idx1-ubyte"));
  if (img.be32() != 0x00000803) throw UsageError("dataset file " + img.path.string() + ": not an IDX3 image file (bad magic)");
  if (lab.be32() != 0x00000801) throw UsageError("dataset file " + lab.path.string() + ": not an IDX1 label file (bad magic)");
  const uint32_t n = img.be32(), rows = img.be32(), cols = img.be32(), nl = lab.be32();
  if (n != nl) throw UsageError("dataset " + prefix + ": " + std::to_string(n) + " images but " + std::to_string(nl) + " labels");
  Dataset d;
  d.count = limit ? std::min(limit, n) : n;
  d.features = rows * cols;
  std::vector<uint8_t> pixels(size_t(d.count) * d.features);
  img.read(pixels.data(), pixels.size());
  d.labels.resize(d.count);
  lab.read(d.labels.data(), d.labels.size());
  d.images.resize(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) d.images[i] = float(pixels[i]) / 255.0f;
  for (uint8_t l : d.labels)
    if (l > 9) throw UsageError("dataset file " + lab.path.string() + ": label " + std::to_string(l) + " is not a class 0-9");
  return d;
}

}  // namespace wse
