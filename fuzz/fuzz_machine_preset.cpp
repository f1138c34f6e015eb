// libFuzzer target: a machine preset (machines/*.yaml) through load_machine.
#include "fuzz_support.hpp"
#include "host/config.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = wse::fuzz::write("preset.yaml", data, size);
  return wse::fuzz::expect_accept_or_usage_error([&] { wse::load_machine(path.string()); });
}
