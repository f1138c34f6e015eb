#include "memoryx/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "fabric/errors.hpp"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace wse {

void write_safetensors(const std::filesystem::path& path, const Checkpoint& ckpt) {
  std::vector<TensorView> views;
  for (const Tensor& t : ckpt.tensors) views.push_back({&t.name, &t.shape, t.data.data(), t.data.size()});
  write_safetensors(path, views, ckpt.metadata);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    const uint64_t bytes = t.numel * sizeof(float);
    header[*t.name] = {{"dtype", "F32"}, {"shape", *t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
  const uint64_t len = text.size();
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError("checkpoint " + path.string() + ": cannot open for writing");
    out.write(reinterpret_cast<const char*>(&len), 8);
    out.write(text.data(), std::streamsize(text.size()));
    std::vector<float> chunk;  // masked tensors go out through a small buffer, never a whole copy
    for (const TensorView& t : tensors) {
      if (!t.mask) {
        out.write(reinterpret_cast<const char*>(t.data), std::streamsize(t.numel * sizeof(float)));
        continue;
      }
      for (size_t i = 0; i < t.numel; i += 1 << 16) {
        const size_t n = std::min<size_t>(1 << 16, t.numel - i);
        chunk.assign(t.data + i, t.data + i + n);
        for (size_t k = 0; k < n; ++k)
          if (!t.mask[i + k]) chunk[k] = std::numeric_limits<float>::quiet_NaN();
        out.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(n * sizeof(float)));
      }
    }
    if (!out) throw UsageError("checkpoint " + path.string() + ": write failed");
  }
  std::filesystem::rename(tmp, path);
}

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)), where_("checkpoint " + path_.string()) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw UsageError(where_ + ": file not found");
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  in.seekg(0);
  uint64_t len = 0;
  if (size < 8 || !in.read(reinterpret_cast<char*>(&len), 8)) throw UsageError(where_ + ": truncated (no header length)");
  if (len > size - 8 || len > (uint64_t(100) << 20)) throw UsageError(where_ + ": header length " + std::to_string(len) + " is beyond the file");
  std::string text(len, '\0');
  in.read(text.data(), std::streamsize(len));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(where_ + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw UsageError(where_ + ": header is not a JSON object");
  const uint64_t data_start = 8 + len, data_size = size - data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m) metadata_[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
      continue;
    }
    const auto& e = *it;
    try {
      if (e.at("dtype") != "F32") throw UsageError(where_ + ": tensor '" + it.key() + "' has dtype " + e.at("dtype").dump() + ", only F32 is supported");
      TensorEntry t;
      t.name = it.key();
      t.shape = e.at("shape").get<std::vector<uint32_t>>();
      auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
      t.numel = 1;
      for (auto d : t.shape) t.numel *= d;
      if (off.size() != 2 || off[1] < off[0] || off[1] > data_size || off[1] - off[0] != t.numel * sizeof(float))
        throw UsageError(where_ + ": tensor '" + it.key() + "' has data_offsets that do not match its shape or the file size");
      t.offset = data_start + off[0];
      tensors_.push_back(std::move(t));
    } catch (const nlohmann::json::exception& ex) {
      throw UsageError(where_ + ": tensor '" + it.key() + "' has a malformed entry: " + ex.what());
    }
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  for (const TensorEntry& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void SafetensorsFile::read(const TensorEntry& t, float* out) const {
  std::ifstream in(path_, std::ios::binary);  // one stream per call: tasks read in parallel
  in.seekg(std::streamoff(t.offset));
  in.read(reinterpret_cast<char*>(out), std::streamsize(t.numel * sizeof(float)));
  if (!in) throw UsageError(where_ + ": truncated data for tensor '" + t.name + "'");
}

Checkpoint read_safetensors(const std::filesystem::path& path) {
  const SafetensorsFile file(path);
  Checkpoint ckpt;
  ckpt.metadata = file.metadata();
  for (const TensorEntry& e : file.tensors()) {
    Tensor t{e.name, e.shape, std::vector<float>(e.numel)};
    file.read(e, t.data.data());
    ckpt.tensors.push_back(std::move(t));
  }
  return ckpt;
}

}  // namespace wse
