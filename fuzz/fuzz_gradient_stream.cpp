// libFuzzer target: a GradientStream message through decode_gradient_stream (verifier, then the
// meaning checks, alone and against an expectation).
#include "fuzz_support.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/stream_validation.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wse::Buffer buffer(data, data + size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    const wse::GradientMessage g = wse::decode_gradient_stream(buffer, "fuzz input");
    // The checks promise this: dense, the whole matrix; sparse, a value per index, inside it.
    if (!g.sparse ? g.values.size() != size_t(g.rows) * g.cols || !g.indices.empty() : g.values.size() != g.indices.size()) std::abort();
    for (size_t i = 0; i < g.indices.size(); ++i)
      if (g.indices[i] >= uint64_t(g.rows) * g.cols || (i && g.indices[i] <= g.indices[i - 1])) std::abort();
    wse::GradientStreamExpectation e{g.layer_index, g.rows, g.cols, 4, 0};
    wse::decode_gradient_stream(buffer, "fuzz input", &e);
  });
}
