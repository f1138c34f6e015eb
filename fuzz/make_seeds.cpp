// Writes the binary seed inputs of fuzz/corpus/: small, valid WeightStream and GradientStream
// messages, checkpoints of the fuzz targets' model (4 -> 3 -> 2, Adam; dense and sparse), and IDX
// pairs (plain and gzipped) in fuzz_idx's framing. Text seeds (configs, presets) and the activity
// dump are copied from examples/, machines/ and a `wse trace` run (docs/reliability.md). Run by
// hand: fuzz_make_seeds fuzz/corpus
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "wire/gradient_stream.hpp"
#include "memoryx/memoryx.hpp"
#include "wire/weight_stream.hpp"

namespace fs = std::filesystem;
using namespace wse;

namespace {

void put(const fs::path& p, const std::vector<uint8_t>& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  std::printf("  %s (%zu bytes)\n", p.c_str(), bytes.size());
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);  // 31: a gzip header and trailer
  std::vector<uint8_t> out(deflateBound(&z, uLong(in.size())));
  z.next_in = const_cast<Bytef*>(in.data()), z.avail_in = uInt(in.size());
  z.next_out = out.data(), z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(uint8_t(x >> s));
}

// fuzz_idx's framing: 2 bytes of image-file length, the image file, the label file.
std::vector<uint8_t> idx_pair(uint32_t n, uint32_t rows, uint32_t cols, bool gz) {
  std::vector<uint8_t> img, lab;
  be32(img, 0x803), be32(img, n), be32(img, rows), be32(img, cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) img.push_back(uint8_t(i * 37));
  be32(lab, 0x801), be32(lab, n);
  for (uint32_t i = 0; i < n; ++i) lab.push_back(uint8_t(i % 10));
  if (gz) img = gzip(img), lab = gzip(lab);
  std::vector<uint8_t> out = {uint8_t(img.size()), uint8_t(img.size() >> 8)};
  out.insert(out.end(), img.begin(), img.end());
  out.insert(out.end(), lab.begin(), lab.end());
  return out;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path out = argc > 1 ? argv[1] : "fuzz/corpus";
  // Weight streams of a 5 -> 3 layer (bias folded in: 6 x 3), both passes, both encodings.
  std::vector<float> w(15), b(3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = i % 3 ? 0.25f * float(i) - 1.0f : 0.0f;  // a third are zeros
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f - float(i);
  const LayerView layer{"fc1", 0, 5, 3, w.data(), b.data()};
  for (StreamEncoding e : {StreamEncoding::Dense, StreamEncoding::Sparse, StreamEncoding::DenseHalf}) {
    const char* en = e == StreamEncoding::Dense ? "dense" : e == StreamEncoding::Sparse ? "sparse" : "dense_half";
    const auto fwd = encode_weight_streams(layer, 7, StreamPass::Forward, e, {{0, 2}, {2, 6}});
    const auto bwd = encode_weight_streams(layer, 7, StreamPass::Backward, e, {{0, 1}, {1, 6}});  // both passes: row slices
    for (size_t c = 0; c < fwd.size(); ++c) put(out / "weight_stream" / (std::string(en) + "_fwd_col" + std::to_string(c) + ".wsws"), *fwd[c]);
    for (size_t c = 0; c < bwd.size(); ++c) put(out / "weight_stream" / (std::string(en) + "_bwd_col" + std::to_string(c) + ".wsws"), *bwd[c]);
  }
  // Gradient streams: a 6 x 3 layer gradient from wafer 1, and a 1 x 1.
  GradientMessage g{"fc1", 0, 1, 6, 3, 7, {}};
  for (int i = 0; i < 18; ++i) g.values.push_back(0.125f * float(i - 9));
  put(out / "gradient_stream" / "fc1_6x3.wsgs", *encode_gradient_stream(g));
  put(out / "gradient_stream" / "fc2_1x1.wsgs", *encode_gradient_stream({"fc2", 1, 0, 1, 1, 0, {2.5f}, {}}));
  // A sparse one: values only at the mask's positions.
  put(out / "gradient_stream" / "fc1_6x3_sparse.wsgs", *encode_gradient_stream({"fc1", 0, 0, 6, 3, 7, {0.5f, -1.0f, 2.0f}, {1, 7, 16}}));
  // Checkpoints of the fuzz targets' model: Adam dense, Adam sparse (NaN sentinels), SGD.
  const std::vector<LayerSpec> model = {{"fc1", 4, 3}, {"fc2", 3, 2}};
  const fs::path tmp = fs::temp_directory_path() / "wse_make_seeds.safetensors";
  for (const char* kind : {"adam", "adam_sparse", "sgd"}) {
    MemoryXConfig cfg;
    cfg.optimizer.kind = std::string(kind).substr(0, std::string(kind).find('_'));
    cfg.init.max_parallel = 1;
    std::map<std::string, std::string> meta = {{"run_end_step", "9"}, {"run_batch_size", "4"}, {"run_train_samples", "40"}};
    if (std::string(kind) == "adam_sparse") cfg.sparsity.enabled = true, cfg.sparsity.level = 0.5, meta["sparse"] = "1";
    MemoryX mx(cfg, model);
    mx.set_run_metadata(meta);
    mx.write_checkpoint(tmp);
    put(out / "safetensors" / (std::string(kind) + ".safetensors"), slurp(tmp));
  }
  fs::remove(tmp);
  // IDX pairs: 3 images of 4 x 4, plain and gzipped; one 28 x 28 image, plain.
  put(out / "idx" / "plain_3x4x4.idx", idx_pair(3, 4, 4, false));
  put(out / "idx" / "gzip_3x4x4.idx", idx_pair(3, 4, 4, true));
  put(out / "idx" / "plain_1x28x28.idx", idx_pair(1, 28, 28, false));
  return 0;
}
