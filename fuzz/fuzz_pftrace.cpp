// libFuzzer target: a native Perfetto trace (.pftrace, what `wse viz --trace` reads) through the
// checking reader, then into the viewer's PE timelines.
#include "fuzz_support.hpp"
#include "tools/pe_timelines.hpp"
#include "tools/pftrace_reader.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = wse::fuzz::write("trace.pftrace", data, size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    wse::read_pftrace(path, {});
    wse::load_pe_timelines(path, 8, 8, 1000, "wse trace of a fuzzed run");
  });
}
