// MemoryX and SwarmX against hand-computed expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "wire/gradient_stream.hpp"
#include "memoryx/memoryx.hpp"
#include "scratch.hpp"
#include "swarmx/swarmx.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

TEST(Optimizer, SgdWithMomentumMatchesAHandComputedStep) {
  OptimizerConfig cfg{"sgd", 0.1f, 0.9f};
  Tensor w{"w", {3}, {1.0f, -2.0f, 0.5f}};
  Tensor v{"w.momentum", {3}, {0.0f, 0.0f, 0.0f}};
  optimizer_step(cfg, 1, w, {0.5f, 1.0f, -2.0f}, {&v});
  // v = g; w = w - 0.1 g
  EXPECT_FLOAT_EQ(w.data[0], 0.95f);
  EXPECT_FLOAT_EQ(w.data[1], -2.1f);
  EXPECT_FLOAT_EQ(w.data[2], 0.7f);
  optimizer_step(cfg, 2, w, {0.5f, 1.0f, -2.0f}, {&v});
  // v = 0.9 v + g = 1.9 g; w -= 0.1 * 1.9 g
  EXPECT_FLOAT_EQ(v.data[0], 0.95f);
  EXPECT_FLOAT_EQ(w.data[0], 0.95f - 0.095f);
  EXPECT_FLOAT_EQ(w.data[2], 0.7f + 0.38f);
}

TEST(Optimizer, AdamMatchesAHandComputedStep) {
  OptimizerConfig cfg{"adam", 0.01f};
  Tensor w{"w", {2}, {1.0f, -1.0f}};
  Tensor m{"w.exp_avg", {2}, {0, 0}}, v{"w.exp_avg_sq", {2}, {0, 0}};
  optimizer_step(cfg, 1, w, {0.2f, -0.4f}, {&m, &v});
  // Step 1: m = 0.1 g, v = 0.001 g^2; m_hat = g, v_hat = g^2; w -= lr * g / (|g| + eps) = lr * sign(g).
  EXPECT_FLOAT_EQ(m.data[0], 0.02f);
  EXPECT_NEAR(v.data[1], 0.001 * 0.16, 1e-8);  // (1 - 0.999) is inexact in fp32
  EXPECT_NEAR(w.data[0], 1.0f - 0.01f, 1e-7);
  EXPECT_NEAR(w.data[1], -1.0f + 0.01f, 1e-7);
  optimizer_step(cfg, 2, w, {0.2f, -0.4f}, {&m, &v});
  // Step 2 with the same g: m = 0.19 g, v = 0.001999 g^2, m_hat = 0.19/0.19 g, v_hat = g^2: again lr * sign(g).
  EXPECT_NEAR(w.data[0], 1.0f - 0.02f, 1e-6);
  EXPECT_NEAR(w.data[1], -1.0f + 0.02f, 1e-6);
}

// Five steps of changing gradients with weight decay, against PyTorch's torch.optim.Adam and SGD
// (weight decay added to the gradient, Adam's bias corrections 1 - beta^t, SGD's momentum buffer
// starting at the first gradient) computed here in double: the one-step test above cannot tell
// a bias correction's beta1 from its beta2 once the steps' gradients differ (a mutation test).
TEST(Optimizer, FiveStepsFollowPyTorchsFormulasWithWeightDecay) {
  const double lr = 0.01, wd = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-6, momentum = 0.7;
  const std::vector<std::vector<float>> grads = {{0.2f, -0.4f, 0.0f}, {-0.1f, 0.3f, 0.5f}, {0.7f, 0.05f, -0.2f},
                                                 {0.0f, -0.6f, 0.1f}, {0.3f, 0.3f, 0.3f}};
  const std::vector<float> start = {1.0f, -1.0f, 0.25f};
  // Adam.
  OptimizerConfig adam{"adam", float(lr), 0.0f, float(b1), float(b2), float(eps), float(wd)};
  Tensor w{"w", {3}, start};
  Tensor m{"w.exp_avg", {3}, {0, 0, 0}}, v{"w.exp_avg_sq", {3}, {0, 0, 0}};
  std::vector<double> rw(start.begin(), start.end()), rm(3, 0.0), rv(3, 0.0);
  for (uint64_t t = 1; t <= grads.size(); ++t) {
    optimizer_step(adam, t, w, grads[t - 1], {&m, &v});
    for (size_t i = 0; i < 3; ++i) {
      const double g = grads[t - 1][i] + wd * rw[i];
      rm[i] = b1 * rm[i] + (1 - b1) * g, rv[i] = b2 * rv[i] + (1 - b2) * g * g;
      const double mh = rm[i] / (1 - std::pow(b1, double(t))), vh = rv[i] / (1 - std::pow(b2, double(t)));
      rw[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(w.data[i], rw[i], 2e-6) << "adam step " << t << " weight " << i;
  }
  // SGD with momentum.
  OptimizerConfig sgd{"sgd", float(lr), float(momentum)};
  sgd.weight_decay = float(wd);
  Tensor ws{"w", {3}, start};
  Tensor buf{"w.momentum", {3}, {0, 0, 0}};
  std::vector<double> sw(start.begin(), start.end()), sb(3, 0.0);
  for (uint64_t t = 1; t <= grads.size(); ++t) {
    optimizer_step(sgd, t, ws, grads[t - 1], {&buf});
    for (size_t i = 0; i < 3; ++i) {
      const double g = grads[t - 1][i] + wd * sw[i];
      sb[i] = t == 1 ? g : momentum * sb[i] + g;
      sw[i] -= lr * sb[i];
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(ws.data[i], sw[i], 1e-6) << "sgd step " << t << " weight " << i;
  }
}

TEST(Optimizer, MaskedWeightsStayZero) {
  OptimizerConfig cfg{"sgd", 0.1f, 0.9f};
  Tensor w{"w", {2}, {0.0f, 1.0f}};
  Tensor v{"w.momentum", {2}, {0, 0}};
  std::vector<uint8_t> mask = {0, 1};
  optimizer_step(cfg, 1, w, {5.0f, 1.0f}, {&v}, &mask);
  EXPECT_EQ(w.data[0], 0.0f);
  EXPECT_EQ(v.data[0], 0.0f);
  EXPECT_FLOAT_EQ(w.data[1], 0.9f);
}

TEST(MemoryX, SparsityPrunesRoundOfLevelTimesNumelAndStreamsOnlyNonzeros) {
  MemoryXConfig cfg;
  cfg.sparsity.enabled = true;
  cfg.sparsity.level = 0.3;
  cfg.encoding = StreamEncoding::Sparse;
  MemoryX mx(cfg, {{"fc1", 10, 7}, {"fc2", 7, 3}});
  for (size_t l = 0; l < 2; ++l) {
    const auto& mask = mx.mask(l);
    size_t kept = std::count(mask.begin(), mask.end(), 1);
    EXPECT_EQ(kept, mask.size() - size_t(std::llround(0.3 * double(mask.size()))));
    size_t zeros = std::count(mx.weight(l).data.begin(), mx.weight(l).data.end(), 0.0f);
    EXPECT_EQ(zeros, mask.size() - kept);
  }
  // Forward stream of fc1 over 2 columns: rows [0,5) and [5,11) (bias row last).
  auto streams = mx.stream(0, StreamPass::Forward, {{0, 5}, {5, 11}});
  uint64_t words = 0;
  for (const auto& s : streams) words += decode_weight_stream(*s, "test").words.size() - 1;
  EXPECT_EQ(words, std::count(mx.mask(0).begin(), mx.mask(0).end(), 1) + 7u);  // kept weights + dense bias
}

TEST(WeightStream, DenseRoundTripKeepsEveryWordInOrder) {
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, b = {7, 8};
  LayerView view{"fc", 0, 3, 2, w.data(), b.data()};
  auto fwd = encode_weight_streams(view, 4, StreamPass::Forward, StreamEncoding::Dense, {{0, 2}, {2, 4}});
  DecodedStream d = decode_weight_stream(*fwd[1], "test");
  EXPECT_EQ(d.column, 1u);
  EXPECT_EQ(d.words, (std::vector<uint32_t>{4, std::bit_cast<uint32_t>(5.0f), std::bit_cast<uint32_t>(6.0f), std::bit_cast<uint32_t>(7.0f),
                                            std::bit_cast<uint32_t>(8.0f)}));
  // The backward pass streams the same rows in the same order (dX and dW per weight).
  auto bwd = encode_weight_streams(view, 4, StreamPass::Backward, StreamEncoding::Dense, {{1, 2}});
  EXPECT_EQ(decode_weight_stream(*bwd[0], "test").words,
            (std::vector<uint32_t>{2, std::bit_cast<uint32_t>(3.0f), std::bit_cast<uint32_t>(4.0f)}));
}

TEST(WeightStream, DenseHalfPacksTwoFp16WeightsPerWordLowHalfFirst) {
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9};
  LayerView view{"fc", 0, 2, 3, w.data(), b.data()};  // a 3 x 3 matrix with the bias row
  auto s = encode_weight_streams(view, 0, StreamPass::Forward, StreamEncoding::DenseHalf, {{1, 3}});  // 6 weights
  auto pair = [](float lo, float hi) { return Wavelet::f16_pair(0, _Float16(lo), _Float16(hi)).payload; };
  DecodedStream d = decode_weight_stream(*s[0], "test");
  EXPECT_EQ(d.weights, 6u);
  EXPECT_EQ(d.words, (std::vector<uint32_t>{6, pair(4, 5), pair(6, 7), pair(8, 9)}));
  // An odd count leaves the last word's high half empty.
  d = decode_weight_stream(*encode_weight_streams(view, 0, StreamPass::Forward, StreamEncoding::DenseHalf, {{2, 3}})[0], "test");
  EXPECT_EQ(d.words, (std::vector<uint32_t>{3, pair(7, 8), pair(9, 0)}));
  EXPECT_EQ(stream_words(view, StreamPass::Forward, StreamEncoding::DenseHalf, {2, 3}), 2u);
}

TEST(WeightStream, SparseCarriesExactlyTheMasksKeptPositions) {
  // A kept weight whose fp16 value is 0 is still sent (it must get its gradient); a pruned one is not.
  std::vector<float> w = {1e-9f, 2, 3, 0, 5, 6}, b = {7, 8};
  std::vector<uint8_t> wm = {1, 0, 1, 1, 0, 1};
  LayerView view{"fc", 0, 3, 2, w.data(), b.data()};
  view.weight_mask = wm.data();
  DecodedStream d = decode_weight_stream(*encode_weight_streams(view, 0, StreamPass::Forward, StreamEncoding::Sparse, {{0, 4}})[0], "t");
  std::vector<uint32_t> positions;
  for (size_t i = 1; i < d.words.size(); ++i) positions.push_back(d.words[i] >> 16);
  EXPECT_EQ(positions, (std::vector<uint32_t>{0, 2, 3, 5, 6, 7}));  // bias row (no mask): both kept
}

TEST(WeightStream, SparseWithoutAMaskCarriesEveryWeightZerosIncluded) {
  // A parameter the sparsity block leaves dense (here all of them: no mask) is streamed whole: a
  // weight or bias that is 0 now, or rounds to 0 in fp16, must still get its gradient. (Sending
  // only the nonzeros froze zero-initialised biases of every sparse run.)
  std::vector<float> w = {0, 2, 1e-9f, 0, 5, 6}, b = {0, 8};
  LayerView view{"fc", 0, 3, 2, w.data(), b.data()};
  DecodedStream d = decode_weight_stream(*encode_weight_streams(view, 0, StreamPass::Forward, StreamEncoding::Sparse, {{0, 4}})[0], "t");
  std::vector<uint32_t> positions;
  for (size_t i = 1; i < d.words.size(); ++i) positions.push_back(d.words[i] >> 16);
  EXPECT_EQ(positions, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(d.weights, 8u);
  EXPECT_EQ(stream_words(view, StreamPass::Forward, StreamEncoding::Sparse, {0, 4}), 8u);
  // A bias mask of its own prunes only its own zeros.
  std::vector<uint8_t> bm = {0, 1};
  view.bias_mask = bm.data();
  EXPECT_EQ(stream_words(view, StreamPass::Forward, StreamEncoding::Sparse, {0, 4}), 7u);
}

TEST(WeightStream, CorruptOrTruncatedBuffersAreClearErrors) {
  std::vector<float> w(12, 0.5f), b(3, 0.1f);
  LayerView view{"fc", 0, 4, 3, w.data(), b.data()};
  Buffer good = *encode_weight_streams(view, 0, StreamPass::Forward, StreamEncoding::Dense, {{0, 5}})[0];
  for (size_t cut : {size_t(0), size_t(7), good.size() / 3, good.size() / 2}) {
    Buffer truncated(good.begin(), good.begin() + long(cut));
    test::expect_error<UsageError>([&] { decode_weight_stream(truncated, "stream.wsws"); }, {"stream.wsws", "not a valid WeightStream"});
  }
  Buffer flipped = good;
  flipped[4] ^= 0xff;  // the file identifier
  test::expect_error<UsageError>([&] { decode_weight_stream(flipped, "x"); }, {"not a valid WeightStream"});
  // Every single-byte corruption either still verifies or is rejected: never a crash.
  for (size_t i = 0; i < good.size(); ++i) {
    Buffer bad = good;
    bad[i] ^= 0x5a;
    try {
      decode_weight_stream(bad, "x");
    } catch (const UsageError&) {
    }
  }
  Buffer grad = *encode_gradient_stream({"fc", 0, 0, 2, 2, 1, {1, 2, 3, 4}});
  EXPECT_EQ(decode_gradient_stream(grad, "g").values, (std::vector<float>{1, 2, 3, 4}));
  grad.resize(grad.size() / 2);
  test::expect_error<UsageError>([&] { decode_gradient_stream(grad, "g.wsgs"); }, {"g.wsgs", "not a valid GradientStream"});
}

TEST(SwarmX, BroadcastSharesOneBufferAndReduceSumsInTreeOrder) {
  SwarmX sx({9, 4, 50, 100.0});
  EXPECT_EQ(sx.levels(), 2u);  // 9 wafers need two levels of 1:4 nodes
  auto buf = std::make_shared<const Buffer>(Buffer(1000, 7));
  auto copies = sx.broadcast(buf);
  ASSERT_EQ(copies.size(), 9u);
  for (const auto& c : copies) EXPECT_EQ(c.get(), buf.get());  // the same bytes, not a copy
  EXPECT_EQ(buf.use_count(), 10);
  EXPECT_EQ(sx.broadcast_cycles(1000), 2 * 50 + 10u);
  std::vector<std::vector<float>> g;
  for (int w = 0; w < 9; ++w) g.push_back({float(w), 1e8f * (w == 0) + 1.0f});
  auto sum = sx.reduce(g);
  EXPECT_EQ(sum[0], 36.0f);
  // Tree order: ((1e8+1)+1+1+1) + (1+1+1+1) + 1: each 1 is lost against 1e8 in fp32, in this order.
  float expect = ((((1e8f + 1.0f) + 1.0f) + 1.0f) + 1.0f);
  float second = ((1.0f + 1.0f) + 1.0f) + 1.0f;
  EXPECT_EQ(sum[1], (expect + second) + 1.0f);
}

// A safetensors file's header as written: its 8-byte little-endian length, then that many bytes
// (`in` is left at the data).
std::string header_of(std::ifstream& in) {
  uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), 8);
  std::string header(len, '\0');
  in.read(header.data(), long(len));
  return header;
}

TEST(Safetensors, WrittenFilesFollowTheFormatAndReadBack) {
  Checkpoint c;
  c.tensors.push_back({"fc1.weight", {2, 3}, {1, 2, 3, 4, 5, 6}});
  c.tensors.push_back({"fc1.bias", {3}, {-1, -2, -3}});
  c.metadata["step"] = "12";
  const auto path = wse::test::scratch_file("checkpoint.safetensors");
  write_safetensors(path, c);
  // The format by hand: 8-byte LE header length, JSON header, raw LE data.
  std::ifstream in(path, std::ios::binary);
  auto j = nlohmann::json::parse(header_of(in));
  EXPECT_EQ(j["fc1.weight"]["dtype"], "F32");
  EXPECT_EQ(j["fc1.weight"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(j["fc1.bias"]["data_offsets"], nlohmann::json({24, 36}));
  EXPECT_EQ(j["__metadata__"]["step"], "12");
  float data[9];
  in.read(reinterpret_cast<char*>(data), sizeof data);
  EXPECT_EQ(data[5], 6.0f);
  EXPECT_EQ(data[8], -3.0f);
  Checkpoint back = read_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].data, c.tensors[0].data);
  EXPECT_EQ(back.find("fc1.bias")->shape, std::vector<uint32_t>{3});
  EXPECT_EQ(back.metadata.at("step"), "12");
  // Truncated: a clear error naming the file.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  test::expect_error<UsageError>([&] { read_safetensors(path); }, {path.string(), "fc1.bias"});
}

// The header is padded with spaces to a multiple of 8 bytes (so the data starts 8-byte aligned),
// and by fewer than 8: a header already a multiple of 8 long gets none. Found by a mutation test:
// padding a whole 8 bytes there passed every test (1 configuration in 8 writes such a header, and
// the file still reads), but changed a checkpoint's bytes. Metadata values of 8 lengths in a row
// make every raw header length modulo 8.
TEST(Safetensors, TheHeaderIsPaddedToEightBytesByLessThanEight) {
  int unpadded = 0;
  for (int extra = 0; extra < 8; ++extra) {
    Checkpoint c;
    c.tensors.push_back({"w", {2}, {1, 2}});
    c.metadata["step"] = std::string(size_t(1 + extra), '7');
    const auto path = wse::test::scratch_file("padded_" + std::to_string(extra) + ".safetensors");
    write_safetensors(path, c);
    std::ifstream in(path, std::ios::binary);
    const std::string header = header_of(in);
    const uint64_t len = header.size();
    EXPECT_EQ(len % 8, 0u) << extra;
    const size_t pad = header.size() - (header.find_last_not_of(' ') + 1);
    EXPECT_LT(pad, 8u) << extra << ": " << header;
    unpadded += pad == 0;
    EXPECT_EQ(std::filesystem::file_size(path), 8 + len + 2 * sizeof(float)) << extra;
  }
  EXPECT_EQ(unpadded, 1);  // the one of the eight whose JSON was a multiple of 8 long
}

}  // namespace
}  // namespace wse
