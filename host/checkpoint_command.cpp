#include "host/checkpoint_command.hpp"

#include <cmath>
#include <cstdio>

#include "io/output_file.hpp"

namespace wse {

namespace {

uint64_t finalize_tensor(Tensor& t) {
  uint64_t replaced = 0;
  for (float& v : t.data)
    if (std::isnan(v)) v = 0.0f, ++replaced;
  return replaced;
}

}  // namespace

uint64_t finalize_checkpoint(Checkpoint& ckpt) {
  uint64_t replaced = 0;
  for (Tensor& t : ckpt.tensors) replaced += finalize_tensor(t);
  return replaced;
}

int finalize_checkpoint_command(const std::filesystem::path& input, const std::filesystem::path& output) {
  check_replaceable(output, "--output");  // before the work
  Checkpoint ckpt = read_safetensors(input);
  std::printf("wse: finalizing %s (%zu tensors)\n", input.string().c_str(), ckpt.tensors.size());
  uint64_t total = 0;
  for (Tensor& t : ckpt.tensors) {
    const uint64_t n = finalize_tensor(t);
    if (n) std::printf("  %-24s %llu of %zu sentinels -> 0\n", t.name.c_str(), (unsigned long long)n, t.size());
    total += n;
  }
  if (!total) std::printf("  no NaN sentinels: %s is already dense\n", input.string().c_str());
  if (!output.parent_path().empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output.parent_path(), ec);
    if (ec) throw_output_error("--output", output.parent_path(), "create it", ec.value());
  }
  write_safetensors(output, ckpt);  // atomically: --output may equal --input
  std::printf("  wrote %s\n", output.string().c_str());
  return 0;
}

}  // namespace wse
