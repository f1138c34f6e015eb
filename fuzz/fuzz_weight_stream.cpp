// libFuzzer target: a WeightStream message through decode_weight_stream: the FlatBuffers
// verifier, then the meaning checks, once alone and once against a model's expectation built
// from the message's own header (so inputs that pass the first reach the second's comparisons).
#include "fuzz_support.hpp"
#include "wire/stream_validation.hpp"
#include "wire/weight_stream.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wse::Buffer buffer(data, data + size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    const wse::DecodedStream d = wse::decode_weight_stream(buffer, "fuzz input");
    // The header word is the weight count; the payload holds one word per weight (two per word
    // for dense fp16 pairs).
    const uint64_t words = d.encoding == wse::StreamEncoding::DenseHalf ? (uint64_t(d.weights) + 1) / 2 : d.weights;
    if (d.words.empty() || d.words[0] != d.weights || d.words.size() - 1 != words) std::abort();
    wse::WeightStreamExpectation e{d.layer_index, d.rows, d.cols, d.column, d.pass, d.encoding, {d.slice_begin, d.slice_end}, 0};
    wse::decode_weight_stream(buffer, "fuzz input", &e);
  });
}
