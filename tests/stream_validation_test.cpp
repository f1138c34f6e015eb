// WeightStream and GradientStream messages checked in meaning (wire/stream_validation.hpp):
// each contradiction below is built with the FlatBuffers builder directly, as a foreign or
// corrupted writer would, and must be rejected naming the field, the value and what was expected.
#include <gtest/gtest.h>

#include <bit>
#include <functional>

#include "host/inspect_command.hpp"
#include "wire/control_message.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/input_batch.hpp"
#include "wire/stream_validation.hpp"
#include "wire/weight_stream.hpp"
#include "schemas/gradient_stream_generated.h"
#include "schemas/weight_stream_generated.h"
#include "cli_support.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

struct Ws {
  uint32_t layer_index = 0, rows = 6, cols = 3, column = 0, row_begin = 0, row_end = 2;
  int8_t pass = 0, encoding = 0;
  uint64_t step = 7;
  std::vector<uint32_t> payload;
  int64_t nonzeros = -1;  // -1: the payload's size
};

Buffer build(const Ws& w) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("fc1");
  auto words = fbb.CreateVector(w.payload);
  fb::WeightStreamBuilder b(fbb);
  b.add_layer(name);
  b.add_layer_index(w.layer_index);
  b.add_step(w.step);
  b.add_pass(fb::Pass(w.pass));
  b.add_encoding(fb::Encoding(w.encoding));
  b.add_rows(w.rows);
  b.add_cols(w.cols);
  b.add_column(w.column);
  b.add_row_begin(w.row_begin);
  b.add_row_end(w.row_end);
  b.add_nonzeros(w.nonzeros < 0 ? uint32_t(w.payload.size()) : uint32_t(w.nonzeros));
  b.add_payload(words);
  fbb.Finish(b.Finish(), fb::WeightStreamIdentifier());
  return Buffer(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

uint32_t sparse_word(float v, uint32_t index) { return uint32_t(std::bit_cast<uint16_t>(_Float16(v))) | index << 16; }

Ws dense_fwd() {
  Ws w;  // rows [0, 2) of a 6 x 3 matrix: 6 words
  for (uint32_t i = 0; i < 6; ++i) w.payload.push_back(std::bit_cast<uint32_t>(float(i)));
  return w;
}

Ws sparse_fwd(std::vector<uint32_t> indices) {
  Ws w;
  w.encoding = 1;
  for (uint32_t i : indices) w.payload.push_back(sparse_word(1.5f, i));
  return w;
}

void rejected(const Ws& w, std::initializer_list<std::string> fragments, const WeightStreamExpectation* e = nullptr) {
  test::expect_error<UsageError>([&] { decode_weight_stream(build(w), "stream s.wsws", e); }, fragments);
}

TEST(StreamValidation, WhatTheEncoderWritesIsAccepted) {
  std::vector<float> wt(7 * 5), bias(5);
  for (size_t i = 0; i < wt.size(); ++i) wt[i] = i % 4 ? float(i) * 0.1f - 1.0f : 0.0f;
  const LayerView layer{"fc2", 1, 7, 5, wt.data(), bias.data()};
  for (StreamEncoding e : {StreamEncoding::Dense, StreamEncoding::Sparse, StreamEncoding::DenseHalf})
    for (StreamPass p : {StreamPass::Forward, StreamPass::Backward}) {
      const std::vector<StreamSlice> slices = {{0, 3}, {3, 3}, {3, 8}};  // both passes stream row slices
      const auto bufs = encode_weight_streams(layer, 3, p, e, slices);
      for (uint32_t c = 0; c < bufs.size(); ++c) {
        const WeightStreamExpectation expect{1, 8, 5, c, p, e, slices[c], 3};
        const DecodedStream d = decode_weight_stream(*bufs[c], "stream", &expect);
        EXPECT_EQ(d.words.size() - 1, stream_words(layer, p, e, slices[c]));
        EXPECT_EQ(d.words[0], d.weights);
      }
    }
}

TEST(StreamValidation, EveryContradictionInAWeightStreamIsNamed) {
  EXPECT_NO_THROW(decode_weight_stream(build(dense_fwd()), "ok"));
  EXPECT_NO_THROW(decode_weight_stream(build(sparse_fwd({0, 2, 5})), "ok"));
  Ws w = dense_fwd();
  w.encoding = 7;
  rejected(w, {"stream s.wsws", "field 'encoding'", "value 7", "expected 0 = Dense, 1 = Sparse or 2 = DenseHalf"});
  w = dense_fwd(), w.pass = 3;
  rejected(w, {"field 'pass'", "value 3", "expected 0 = Forward or 1 = Backward"});
  w = dense_fwd(), w.row_begin = 4, w.row_end = 2;
  rejected(w, {"field 'row_begin'", "[4, 2) is reversed"});
  w = dense_fwd(), w.row_begin = 5, w.row_end = 9;
  rejected(w, {"field 'row_end'", "9 is outside the 6 x 3 matrix", "a slice cuts its 6 rows"});
  w = dense_fwd(), w.pass = 1, w.row_begin = 5, w.row_end = 7;  // a backward slice cuts the same rows
  rejected(w, {"field 'row_end'", "7 is outside the 6 x 3 matrix"});
  w = dense_fwd(), w.payload.pop_back();
  rejected(w, {"field 'nonzeros'", "5 weights, expected 6"});
  w = dense_fwd(), w.nonzeros = 9;
  rejected(w, {"field 'nonzeros'", "9 weights, expected 6"});
  // Dense fp16 pairs: every position, two per word, the last word's high half empty when odd.
  w = dense_fwd(), w.encoding = int(StreamEncoding::DenseHalf);
  rejected(w, {"field 'payload'", "6 words for 6 weights, expected 3"});
  w.payload.resize(3), w.nonzeros = 6;
  EXPECT_NO_THROW(decode_weight_stream(build(w), "ok"));
  Ws odd = w;
  odd.rows = 6, odd.cols = 3, odd.row_end = 1, odd.nonzeros = 3, odd.payload = {1u | (2u << 16), 5u << 16};
  rejected(odd, {"field 'payload[1]'", "high half of the last word holds a weight beyond the slice's 3"});
  w = dense_fwd(), w.rows = 1;
  rejected(w, {"field 'rows'", "expected at least 2"});
  w = dense_fwd(), w.cols = 0, w.payload.clear();
  rejected(w, {"field 'cols'"});
  rejected(sparse_fwd({0, 6}), {"field 'payload[1]'", "index 6 is outside the slice (expected below 6)"});
  rejected(sparse_fwd({1, 3, 3}), {"field 'payload[2]'", "index 3 repeats index 3", "strictly increasing"});
  rejected(sparse_fwd({4, 2}), {"field 'payload[1]'", "index 2 comes after index 4"});
  Ws many = sparse_fwd({0, 1, 2, 3, 4, 5});
  many.payload.push_back(sparse_word(1.0f, 5));
  rejected(many, {"field 'nonzeros'", "7 weights, expected at most the slice's 6 positions"});
  Ws wide = sparse_fwd({0});
  wide.rows = 70000, wide.cols = 2, wide.row_end = 40000;  // 80000 positions: beyond a 16-bit index
  rejected(wide, {"field 'row_end'", "80000 positions", "65536"});
  // Exactly 65,536 positions: indices 0 to 65,535, all a 16-bit index addresses (a 1,024-wide
  // layer's column of 63 feature rows and the bias row). Refused by a mutation nothing caught.
  Ws full = sparse_fwd({0});
  full.rows = 65537, full.cols = 1, full.row_end = 65536;
  EXPECT_NO_THROW(decode_weight_stream(build(full), "ok"));
  full.row_end = 65537;
  rejected(full, {"field 'row_end'", "65537 positions", "65536"});
}

TEST(StreamValidation, AWeightStreamMustBeTheOneTheModelExpects) {
  const Ws w = dense_fwd();
  const WeightStreamExpectation ok{0, 6, 3, 0, StreamPass::Forward, StreamEncoding::Dense, {0, 2}, 7};
  EXPECT_NO_THROW(decode_weight_stream(build(w), "s", &ok));
  auto with = [&](std::function<void(WeightStreamExpectation&)> f) {
    WeightStreamExpectation e = ok;
    f(e);
    return e;
  };
  WeightStreamExpectation e = with([](auto& e) { e.layer_index = 2; });
  rejected(w, {"field 'layer_index'", "0, expected 2 for the model reading it"}, &e);
  e = with([](auto& e) { e.rows = 785; });
  rejected(w, {"field 'rows'", "6, expected 785"}, &e);
  e = with([](auto& e) { e.cols = 16; });
  rejected(w, {"field 'cols'", "3, expected 16"}, &e);
  e = with([](auto& e) { e.column = 3; });
  rejected(w, {"field 'column'", "0, expected 3"}, &e);
  e = with([](auto& e) { e.pass = StreamPass::Backward; });
  rejected(w, {"field 'pass'", "Forward, expected Backward"}, &e);
  e = with([](auto& e) { e.encoding = StreamEncoding::Sparse; });
  rejected(w, {"field 'encoding'", "dense fp32, expected sparse fp16+index"}, &e);
  e = with([](auto& e) { e.slice = {2, 4}; });
  rejected(w, {"field 'row_begin'", "0, expected 2"}, &e);
  e = with([](auto& e) { e.step = 8; });
  rejected(w, {"field 'step'", "7, expected 8"}, &e);
  // A layer of another name at the same index and shape (another model's stream) is not this one.
  e = with([](auto& e) { e.layer = "fc2"; });
  rejected(w, {"field 'layer'", "'fc1', expected 'fc2' (the model's layer at layer_index)"}, &e);
  e = with([](auto& e) { e.layer = "fc1"; });
  EXPECT_NO_THROW(decode_weight_stream(build(w), "s", &e));
  EXPECT_EQ(decode_weight_stream(build(w), "s").layer, "fc1");
  EXPECT_EQ(decode_weight_stream(build(w), "s").step, 7u);
}

Buffer gradient(uint32_t rows, uint32_t cols, size_t values, uint32_t wafer = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("fc1");
  auto v = fbb.CreateVector(std::vector<float>(values, 0.5f));
  fb::GradientStreamBuilder b(fbb);
  b.add_layer(name);
  b.add_layer_index(0);
  b.add_step(4);
  b.add_wafer(wafer);
  b.add_rows(rows);
  b.add_cols(cols);
  b.add_values(v);
  fbb.Finish(b.Finish(), fb::GradientStreamIdentifier());
  return Buffer(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(StreamValidation, EveryContradictionInAGradientStreamIsNamed) {
  const GradientStreamExpectation e{0, 6, 3, 2, 4};
  EXPECT_EQ(decode_gradient_stream(gradient(6, 3, 18), "g", &e).values.size(), 18u);
  test::expect_error<UsageError>([] { decode_gradient_stream(gradient(6, 3, 17), "g.wsgs"); },
                                 {"g.wsgs", "field 'values'", "17 values, expected rows x cols = 6 x 3 = 18"});
  test::expect_error<UsageError>([] { decode_gradient_stream(gradient(0, 3, 0), "g"); }, {"field 'rows'"});
  // 65536 x 65536 with no values: the product is checked in 64 bits, never wraps to a match.
  test::expect_error<UsageError>([] { decode_gradient_stream(gradient(65536, 65536, 0), "g"); }, {"field 'values'", "4294967296"});
  test::expect_error<UsageError>([&] { decode_gradient_stream(gradient(6, 3, 18, 2), "g", &e); },
                                 {"field 'wafer'", "2, expected below 2"});
  // Sparse: a value per index, inside the matrix, strictly increasing.
  auto sparse = [](std::vector<uint32_t> idx, size_t values) {
    flatbuffers::FlatBufferBuilder fbb;
    auto name = fbb.CreateString("fc1");
    auto v = fbb.CreateVector(std::vector<float>(values, 0.25f));
    auto i = fbb.CreateVector(idx);
    fb::GradientStreamBuilder b(fbb);
    b.add_layer(name);
    b.add_rows(6);
    b.add_cols(3);
    b.add_step(4);
    b.add_values(v);
    b.add_indices(i);
    fbb.Finish(b.Finish(), fb::GradientStreamIdentifier());
    return Buffer(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  };
  EXPECT_EQ(decode_gradient_stream(sparse({0, 4, 17}, 3), "g", &e).indices, (std::vector<uint32_t>{0, 4, 17}));
  // Every weight pruned: a sparse gradient with no values, not a dense one missing them.
  const GradientMessage none = decode_gradient_stream(sparse({}, 0), "g", &e);
  EXPECT_TRUE(none.sparse);
  EXPECT_TRUE(none.values.empty());
  EXPECT_TRUE(decode_gradient_stream(*encode_gradient_stream(none), "g", &e).sparse);  // and it survives a round trip
  test::expect_error<UsageError>([&] { decode_gradient_stream(sparse({0, 4}, 3), "g"); }, {"field 'values'", "3 values for 2 indices"});
  test::expect_error<UsageError>([&] { decode_gradient_stream(sparse({0, 18}, 2), "g"); }, {"field 'indices[1]'", "index 18 is outside the 6 x 3"});
  test::expect_error<UsageError>([&] { decode_gradient_stream(sparse({5, 5}, 2), "g"); }, {"field 'indices[1]'", "strictly increasing"});
  // `wse inspect` of a sparse gradient says how many values it holds, not its matrix's size.
  const std::filesystem::path file = test::process_scratch() / "sparse.wsgs";
  const Buffer three = sparse({0, 4, 17}, 3);
  test::write_file(file, std::string(three.begin(), three.end()));
  testing::internal::CaptureStdout();
  EXPECT_EQ(inspect_stream_file(file), 0);
  const std::string shown = testing::internal::GetCapturedStdout();
  EXPECT_NE(shown.find("layer fc1 (#0) step 5 (field 'step' 4) wafer 0, sparse: 3 values at their positions in a 6 x 3 matrix"), std::string::npos) << shown;
  const GradientStreamExpectation named{0, 6, 3, 2, 4, "fc2"};
  test::expect_error<UsageError>([&] { decode_gradient_stream(gradient(6, 3, 18), "g", &named); },
                                 {"field 'layer'", "'fc1', expected 'fc2'"});
  const GradientStreamExpectation other{0, 785, 16, 1, 4};
  test::expect_error<UsageError>([&] { decode_gradient_stream(gradient(6, 3, 18), "g", &other); }, {"field 'rows'", "6, expected 785"});
}

// What `wse inspect` prints of a GradientStream written to a file of that name.
std::string inspected(const GradientMessage& g, const std::string& name) {
  const std::filesystem::path file = test::process_scratch() / name;
  const SharedBuffer bytes = encode_gradient_stream(g);
  test::write_file(file, std::string(bytes->begin(), bytes->end()));
  testing::internal::CaptureStdout();
  EXPECT_EQ(inspect_stream_file(file), 0);
  return testing::internal::GetCapturedStdout();
}

// Every field of a GradientStream survives encoding and decoding, and `wse inspect` prints the
// wafer the stream came from. Found by a mutation test: the decoder setting `wafer` to 0 passed
// every test (each test's stream was wafer 0's); inspect then said "wafer 0" of wafer 1's stream.
TEST(StreamValidation, AGradientStreamsEveryFieldSurvivesARoundTrip) {
  for (bool sparse : {false, true}) {
    GradientMessage g;
    g.layer = "fc2", g.layer_index = 1, g.wafer = 3, g.rows = 5, g.cols = 4, g.step = 77, g.sparse = sparse;
    if (sparse) g.indices = {1, 6, 19}, g.values = {0.5f, -2.0f, 3.25f};
    else for (int i = 0; i < 20; ++i) g.values.push_back(float(i) - 7.5f);
    const GradientMessage back = decode_gradient_stream(*encode_gradient_stream(g), "g");
    EXPECT_EQ(back.layer, g.layer);
    EXPECT_EQ(back.layer_index, g.layer_index);
    EXPECT_EQ(back.wafer, g.wafer);
    EXPECT_EQ(back.rows, g.rows);
    EXPECT_EQ(back.cols, g.cols);
    EXPECT_EQ(back.step, g.step);
    EXPECT_EQ(back.sparse, g.sparse);
    EXPECT_EQ(back.indices, g.indices);
    EXPECT_EQ(back.values, g.values);
    const std::string shown = inspected(g, sparse ? "wafer3_sparse.wsgs" : "wafer3.wsgs");
    EXPECT_NE(shown.find("layer fc2 (#1) step 78 (field 'step' 77) wafer 3, "), std::string::npos) << shown;
  }
  // Steps as every other output counts them, from 1 (it said "step 77" of the stream the log calls
  // step 78: a review, forty-fifth round), and an evaluation batch as one.
  {
    GradientMessage g;
    g.layer = "fc1", g.rows = 2, g.cols = 1, g.values = {1.0f, 2.0f}, g.step = (uint64_t(1) << 48) + 2;
    const std::string shown = inspected(g, "eval.wsgs");
    EXPECT_NE(shown.find("layer fc1 (#0) evaluation batch 3 (field 'step' 281474976710658) wafer 0, "), std::string::npos) << shown;
  }
  // A layer name holding an escape was printed raw, acting on the terminal (an error audit,
  // forty-fourth round): shown as \xNN, as a config's text is.
  GradientMessage g;
  g.layer = "fc1\x1b[31m", g.rows = 1, g.cols = 1, g.values = {1.0f};
  const std::string shown = inspected(g, "escape.wsgs");
  EXPECT_NE(shown.find("layer fc1\\x1b[31m (#0)"), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << "an escape byte reached standard output";
}

// An InputBatch against what its wafer expects: a label must name one of the model's classes.
// A label equal to the class count was accepted by a mutation nothing caught (no test decoded a
// batch with an expectation), and the loss task then read past its buffer.
TEST(StreamValidation, AnInputBatchsLabelsAreBelowTheClassCount) {
  InputBatchMessage m;
  m.step = 3, m.wafer = 1, m.rows = 2, m.features = 3, m.half = false;
  m.values = {1, 2, 3, 4, 5, 6};
  m.labels = {0, 9};
  const InputBatchExpectation expect{3, 1, 2, 3, 10, false};
  const InputBatchMessage back = decode_input_batch(*encode_input_batch(m), "batch", &expect);
  EXPECT_EQ(back.labels, m.labels);
  EXPECT_EQ(back.values, m.values);
  EXPECT_EQ(back.wafer, 1u);
  m.labels = {0, 10};
  test::expect_error<UsageError>([&] { decode_input_batch(*encode_input_batch(m), "batch", &expect); },
                                 {"batch: field 'labels': label 10 of row 1, expected below the 10 classes"});
  m.labels = {0, 1};
  m.step = 4;
  test::expect_error<UsageError>([&] { decode_input_batch(*encode_input_batch(m), "batch", &expect); }, {"field 'step': 4, expected 3"});
}

// A Loss message may score every sample correct (a batch of one, or a well-trained model): a
// mutation refusing correct == samples went unseen, and a one-sample run then stopped at step 1.
TEST(StreamValidation, ALossMayScoreEverySampleCorrectButNoMore) {
  ControlMessage m;
  m.kind = ControlKind::Loss, m.step = 2, m.samples = 64, m.correct = 64, m.wafers = 1, m.loss_sum = 1.5;
  const ControlMessage back = decode_control(*encode_control(m), "loss");
  EXPECT_EQ(back.correct, 64u);
  EXPECT_EQ(back.samples, 64u);
  m.correct = 65;
  test::expect_error<UsageError>([&] { decode_control(*encode_control(m), "loss"); },
                                 {"loss: field 'correct': 65, expected at most the 64 samples scored"});
}

}  // namespace
}  // namespace wse
