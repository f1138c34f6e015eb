// libFuzzer target: a checkpoint (.safetensors) through SafetensorsFile and read_safetensors,
// then resumed into a small model's MemoryX (names, shapes, optimizer and NaN sentinels checked
// against the model).
#include "fuzz_support.hpp"
#include "memoryx/memoryx.hpp"
#include "memoryx/safetensors.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = wse::fuzz::write("checkpoint.safetensors", data, size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    wse::read_safetensors(path);
    const wse::SafetensorsFile file(path);
    wse::MemoryXConfig cfg;  // the model of fuzz/make_seeds.cpp: 4 -> 3 -> 2, Adam
    cfg.optimizer.kind = "adam";
    cfg.init.max_parallel = 1;
    if (file.metadata().count("sparse")) cfg.sparsity.enabled = true, cfg.sparsity.level = 0.5;
    wse::MemoryX mx(cfg, {{"fc1", 4, 3}, {"fc2", 3, 2}}, file);
  });
}
