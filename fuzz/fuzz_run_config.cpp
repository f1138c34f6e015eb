// libFuzzer target: a run config (YAML) through load_run_config, then the memory estimate made
// from it, as `wse run` does before building anything.
#include "fuzz_support.hpp"
#include "host/config.hpp"
#include "host/memory_budget.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = wse::fuzz::write("config.yaml", data, size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    const wse::RunConfig cfg = wse::load_run_config(path);
    wse::estimate_run_memory(cfg);
  });
}
