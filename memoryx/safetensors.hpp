#pragma once
// Checkpoints in the safetensors format: 8-byte little-endian header length, a JSON header
// ({name: {dtype, shape, data_offsets}, "__metadata__": {...}}), then raw little-endian data.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "memoryx/tensor.hpp"

namespace wse {

struct Checkpoint {
  std::vector<Tensor> tensors;                   // written in this order
  std::map<std::string, std::string> metadata;   // string -> string, as the format requires
  const Tensor* find(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

// One tensor of a safetensors file: where its data is.
struct TensorEntry {
  std::string name;
  std::vector<uint32_t> shape;
  uint64_t offset = 0;  // of its first byte in the file
  size_t numel = 0;
};

// A checkpoint file whose header is read and checked up front and whose tensors are read on
// demand, each straight into the caller's memory: MemoryX's lazy init copies a resumed tensor
// inside its own task, so the checkpoint is never held in memory beside the store.
class SafetensorsFile {
 public:
  // Throws UsageError naming the file on anything malformed (only F32 tensors are supported).
  explicit SafetensorsFile(std::filesystem::path path);
  const std::string& where() const { return where_; }  // "checkpoint PATH", for messages
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }  // in file order
  const TensorEntry* find(const std::string& name) const;
  // Reads one tensor's numel floats into `out`; safe to call from several threads at once.
  void read(const TensorEntry& t, float* out) const;

 private:
  std::filesystem::path path_;
  std::string where_;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorEntry> tensors_;
};

// A tensor to write without copying it first: positions whose `mask` byte is 0 are written as
// NaN, the sparsity sentinel (mask may be null: nothing masked).
struct TensorView {
  const std::string* name;
  const std::vector<uint32_t>* shape;
  const float* data;
  size_t numel;
  const uint8_t* mask = nullptr;
};

// Writes atomically (to a temporary file, then renamed): an interrupted write never leaves a
// truncated checkpoint under the final name.
void write_safetensors(const std::filesystem::path& path, const Checkpoint& ckpt);
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata);
// Throws UsageError naming the file on anything malformed (only F32 tensors are supported).
Checkpoint read_safetensors(const std::filesystem::path& path);

}  // namespace wse
