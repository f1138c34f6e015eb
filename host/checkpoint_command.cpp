#include "host/checkpoint_command.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "io/output_dir.hpp"
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

// The folder --output goes into, made (with its missing parents) and proved writable before the
// work, and taken away again if the command fails before it writes: a name ending in '/', a
// read-only folder or a full disk was found only after the whole checkpoint was read and
// converted, and left the folders it had made.
struct OutputFolder {
  std::vector<std::filesystem::path> made;
  bool written = false;

  explicit OutputFolder(const std::filesystem::path& output) {
    const std::string name = output.filename().string();
    if (name.empty() || name == "." || name == "..")
      throw OutputError("--output " + output.string() + ": not a file name; name the file to write, e.g. " +
                        (output / "dense.safetensors").lexically_normal().string());
    check_replaceable(output, "--output");
    const std::filesystem::path dir = output.parent_path().empty() ? std::filesystem::path(".") : output.parent_path();
    made = make_missing_folders(dir, "--output's folder");
    try {
      if (!std::filesystem::is_directory(dir)) throw OutputError("--output " + output.string() + ": " + dir.string() + " is not a folder");
      probe_writable(dir, "--output's folder");
    } catch (const OutputError&) {
      remove_made_folders(made);
      throw;
    }
  }
  ~OutputFolder() {
    if (!written) remove_made_folders(made);
  }
};

int finalize_checkpoint_command(const std::filesystem::path& input, const std::filesystem::path& output) {
  OutputFolder folder(output);  // before the work
  Checkpoint ckpt = read_safetensors(input);
  std::printf("wse: finalizing %s (%zu tensors)\n", input.string().c_str(), ckpt.tensors.size());
  uint64_t total = 0;
  for (Tensor& t : ckpt.tensors) {
    const uint64_t n = finalize_tensor(t);
    if (n) std::printf("  %-24s %llu of its %zu values were sentinels (pruned weights), now 0\n", t.name.c_str(), (unsigned long long)n, t.size());
    total += n;
  }
  if (!total) std::printf("  no NaN sentinels: %s is already dense\n", input.string().c_str());
  write_safetensors(output, ckpt);  // atomically: --output may equal --input
  folder.written = true;
  std::printf("  wrote %s\n", output.string().c_str());
  return 0;
}

}  // namespace wse
