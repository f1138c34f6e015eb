#include "host/dataset.hpp"

#include <zlib.h>

#include <fstream>
#include <memory>
#include <vector>

#include "core/errors.hpp"
#include "io/input_file.hpp"
#include "io/memory_limit.hpp"

namespace wse {

namespace {

constexpr uint32_t kImageMagic = 0x00000803, kLabelMagic = 0x00000801;
constexpr uint32_t kMaxFeatures = 1u << 24;  // 4096 x 4096 pixels: far beyond any IDX image set

// The plain file when both are there (docs/config-reference.md, data.dir).
std::filesystem::path find(const std::filesystem::path& dir, const std::string& name) {
  {
    // data.dir naming one of the files (a likely slip) is not a missing package.
    std::error_code ec;
    const auto st = std::filesystem::status(dir, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
      throw UsageError("data.dir " + dir.string() + ": not a folder (a file); name the folder that holds the IDX files (" + name + "[.gz])");
  }
  for (const std::string& candidate : {name, name + ".gz"}) {
    std::error_code ec;
    const bool there = std::filesystem::exists(dir / candidate, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)  // a link loop, a path through a file, no permission
      throw UsageError("dataset file " + (dir / candidate).string() + ": " + ec.message());
    if (there) {
      check_regular_input(dir / candidate, "dataset file " + (dir / candidate).string());  // a FIFO there blocked gzopen for ever
      return dir / candidate;
    }
  }
  throw UsageError("dataset file " + (dir / name).string() + "[.gz] not found (Debian: apt-get install dataset-fashion-mnist)");
}

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& why) {
  throw UsageError("dataset file " + p.string() + ": " + why);
}

// gzread reads plain files too.
struct Reader {
  std::filesystem::path path;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f{nullptr, gzclose};
  explicit Reader(std::filesystem::path p) : path(std::move(p)), f(gzopen(path.c_str(), "rb"), gzclose) {
    if (!f) fail(path, "cannot open");
  }
  void read(void* out, uint64_t n) {
    auto* p = static_cast<uint8_t*>(out);
    while (n) {  // gzread takes an unsigned count: read in pieces
      const unsigned chunk = unsigned(std::min<uint64_t>(n, 1u << 30));
      if (gzread(f.get(), p, chunk) != int(chunk)) {
        const std::string z = zlib_says();
        fail(path, z.empty() ? "truncated or not gzip/IDX" : "the gzip stream is damaged or cut short" + z);
      }
      p += chunk, n -= chunk;
    }
  }
  // Reads to the end, so that a gzipped file's checksum is checked even when only its first
  // samples are used (zlib checks a member's CRC only at its end): a damaged file must not train
  // or score quietly on the bytes before the damage.
  void check_to_end() {
    std::vector<uint8_t> scratch(1 << 16);
    for (;;) {
      const int n = gzread(f.get(), scratch.data(), unsigned(scratch.size()));
      if (n < 0) fail(path, "the gzip stream is damaged" + zlib_says());
      if (n == 0) return;
    }
  }
  // zlib's own words for a failed read ("incorrect data check": a CRC that does not match),
  // without the path gzerror puts first (the message names the file already).
  std::string zlib_says() {
    int code = Z_OK;
    const char* msg = gzerror(f.get(), &code);
    if (code == Z_OK || code == Z_STREAM_END || !msg || !*msg) return {};
    std::string m = msg;
    if (const std::string prefix = path.string() + ": "; m.rfind(prefix, 0) == 0) m.erase(0, prefix.size());
    return " (zlib: " + m + ")";
  }
  uint32_t be32() {
    uint8_t b[4];
    read(b, 4);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  }
};

// The bytes the file holds once uncompressed: its length, or, gzipped, the size its trailer
// records (modulo 2^32, as gzip keeps it). `exact` is false for the latter.
uint64_t content_size(const std::filesystem::path& p, bool& exact) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) fail(p, "cannot open");
  const uint64_t size = uint64_t(in.tellg());
  in.seekg(0);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  exact = !(size >= 18 && magic[0] == 0x1f && magic[1] == 0x8b);
  if (exact) return size;
  unsigned char t[4];
  in.seekg(std::streamoff(size - 4));
  in.read(reinterpret_cast<char*>(t), 4);
  return uint64_t(t[0]) | uint64_t(t[1]) << 8 | uint64_t(t[2]) << 16 | uint64_t(t[3]) << 24;
}

// What a gzip file really holds, decompressed to its end: read only when its last four bytes
// disagree with the header. They are the size only for a single member with nothing after it; a
// file of several members (gzread joins them, as gunzip does) or with bytes after its end (which
// gzread ignores, as gunzip does) holds what it holds, and a cut-short file's last four bytes are
// no size at all.
struct GzipContent {
  uint64_t bytes = 0;
  std::string damage;  // " (zlib: ...)"; empty: the stream read to its end
};
GzipContent gzip_content(const std::filesystem::path& p) {
  Reader r(p);
  std::vector<uint8_t> buf(1 << 20);
  GzipContent c;
  for (;;) {
    const int n = gzread(r.f.get(), buf.data(), unsigned(buf.size()));
    if (n > 0) c.bytes += uint64_t(n);
    if (n < int(buf.size())) {
      c.damage = r.zlib_says();
      if (n < 0 && c.damage.empty()) c.damage = " (zlib: read error)";
      return c;
    }
  }
}

void check_length(const std::filesystem::path& p, uint64_t expected, const std::string& what) {
  bool exact = true;
  const uint64_t have = content_size(p, exact);
  if (exact ? have == expected : have == (expected & 0xffffffffu)) return;
  const std::string says = "the header says " + what + ", " + std::to_string(expected) + " bytes in all, but the file holds ";
  if (exact) fail(p, says + std::to_string(have) + " bytes");
  const GzipContent c = gzip_content(p);
  if (!c.damage.empty())
    fail(p, says + "a gzip stream that is damaged or cut short after " + std::to_string(c.bytes) + " bytes" + c.damage);
  if (c.bytes != expected) fail(p, says + "a gzip stream of " + std::to_string(c.bytes) + " bytes");
}

}  // namespace

IdxInfo inspect_idx_files(const std::filesystem::path& images, const std::filesystem::path& labels) {
  IdxInfo info{images, labels};
  Reader img(images), lab(labels);
  if (const uint32_t m = img.be32(); m != kImageMagic)
    fail(images, "magic " + std::to_string(m) + " is not an IDX3 image file's (expected 2051 = 0x00000803)");
  if (const uint32_t m = lab.be32(); m != kLabelMagic)
    fail(labels, "magic " + std::to_string(m) + " is not an IDX1 label file's (expected 2049 = 0x00000801)");
  info.count = img.be32(), info.rows = img.be32(), info.cols = img.be32();
  const uint32_t nl = lab.be32();
  if (info.rows == 0 || info.cols == 0 || uint64_t(info.rows) * info.cols > kMaxFeatures)
    fail(images, "image size " + std::to_string(info.rows) + " x " + std::to_string(info.cols) + " is out of range (1 to " +
                     std::to_string(kMaxFeatures) + " pixels)");
  if (info.count != nl)
    throw UsageError("dataset " + images.string() + ": " + std::to_string(info.count) + " images but " + labels.string() + " has " +
                     std::to_string(nl) + " labels");
  check_length(images, 16 + uint64_t(info.count) * info.features(),
               std::to_string(info.count) + " images of " + std::to_string(info.rows) + " x " + std::to_string(info.cols) + " pixels");
  check_length(labels, 8 + uint64_t(nl), std::to_string(nl) + " labels");
  return info;
}

IdxInfo inspect_idx_dataset(const std::filesystem::path& dir, const std::string& prefix) {
  const auto images = find(dir, prefix + "-images-idx3-ubyte");  // images first: the error names the first file missing
  return inspect_idx_files(images, find(dir, prefix + "-labels-idx1-ubyte"));
}

void check_sample_count(const IdxInfo& info, uint32_t limit, const std::string& asked_by) {
  if (limit > info.count)
    throw UsageError(asked_by + " asks for " + std::to_string(limit) + " samples, but " + info.images.string() + " holds " +
                     std::to_string(info.count) + " (ask for " + std::to_string(info.count) + " or fewer)");
}

Dataset load_idx_files(const std::filesystem::path& images, const std::filesystem::path& labels, uint32_t limit,
                       const std::string& asked_by) {
  return load_idx_files(inspect_idx_files(images, labels), limit, asked_by);
}

Dataset load_idx_files(const IdxInfo& info, uint32_t limit, const std::string& asked_by) {
  const std::filesystem::path &images = info.images, &labels = info.labels;
  check_sample_count(info, limit, asked_by);
  Dataset d;
  d.count = limit ? limit : info.count;
  d.features = info.features();
  const uint64_t pixels = uint64_t(d.count) * d.features;
  check_memory(pixels * (1 + sizeof(float)) + d.count, "dataset " + images.string() + " (" + std::to_string(d.count) + " samples)");
  Reader img(images), lab(labels);
  uint8_t skip[16];
  img.read(skip, 16);
  lab.read(skip, 8);
  std::vector<uint8_t> raw(pixels);
  img.read(raw.data(), raw.size());
  d.labels.resize(d.count);
  lab.read(d.labels.data(), d.labels.size());
  img.check_to_end();
  lab.check_to_end();
  d.images.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) d.images[i] = float(raw[i]) / 255.0f;
  for (uint32_t i = 0; i < d.count; ++i)
    if (d.labels[i] > 9)
      fail(labels, "label " + std::to_string(d.labels[i]) + " of sample " + std::to_string(i) + " is not a class 0-9");
  return d;
}

Dataset load_idx_dataset(const std::filesystem::path& dir, const std::string& prefix, uint32_t limit, const std::string& asked_by) {
  const auto images = find(dir, prefix + "-images-idx3-ubyte");
  return load_idx_files(images, find(dir, prefix + "-labels-idx1-ubyte"), limit, asked_by);
}

}  // namespace wse
