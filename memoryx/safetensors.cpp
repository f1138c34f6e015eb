#include "memoryx/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/errors.hpp"
#include "core/shown.hpp"
#include "io/memory_limit.hpp"
#include "io/output_file.hpp"
#include "io/json_text.hpp"

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
  std::string text = json_text(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
  const uint64_t len = text.size();
  OutputFile out(path, "checkpoint");
  out.write(&len, 8);
  out.write(text);
  std::vector<float> chunk;  // masked tensors go out through a small buffer, never a whole copy
  for (const TensorView& t : tensors) {
    if (!t.mask) {
      out.write(t.data, t.numel * sizeof(float));
      continue;
    }
    for (size_t i = 0; i < t.numel; i += 1 << 16) {
      const size_t n = std::min<size_t>(1 << 16, t.numel - i);
      chunk.assign(t.data + i, t.data + i + n);
      for (size_t k = 0; k < n; ++k)
        if (!t.mask[i + k]) chunk[k] = std::numeric_limits<float>::quiet_NaN();
      out.write(chunk.data(), n * sizeof(float));
    }
  }
  out.commit();
}

namespace {

// Every dtype the safetensors format defines, with its size in bytes; only F32 is read here.
const std::map<std::string, uint64_t>& known_dtypes() {
  static const std::map<std::string, uint64_t> d = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
                                                    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
                                                    {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  return d;
}

// A value from the header as a message shows it: at most 64 characters of its JSON (a shape of
// 500,000 dimensions made a message of a megabyte).
std::string brief(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 64) text = text.substr(0, 60) + " ... (" + std::to_string(text.size()) + " characters)";
  return text;
}

// A JSON value that is a whole number in [0, max].
bool whole(const nlohmann::json& v, uint64_t max, uint64_t& out) {
  if (v.is_number_unsigned()) out = v.get<uint64_t>();
  else if (v.is_number_integer() && v.get<int64_t>() >= 0) out = uint64_t(v.get<int64_t>());
  else return false;
  return out <= max;
}

}  // namespace

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)), where_("checkpoint " + path_.string()) {
  const auto bad = [&](const std::string& why) { return UsageError(where_ + ": " + why); };
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) throw bad("file not found");
  if (!std::filesystem::is_regular_file(path_, ec)) throw bad("not a regular file");
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw bad("cannot open it for reading");
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  in.seekg(0);
  uint64_t len = 0;
  if (size < 8 || !in.read(reinterpret_cast<char*>(&len), 8)) throw bad("truncated (" + std::to_string(size) + " bytes, no 8-byte header length)");
  if (len > size - 8 || len > (uint64_t(100) << 20))
    throw bad("header length " + std::to_string(len) + " is beyond the file's " + std::to_string(size) + " bytes (or over 100 MiB)");
  std::string text(len, '\0');
  if (!in.read(text.data(), std::streamsize(len))) throw bad("truncated header");
  // The format pads a header with spaces, nothing else: a NUL or any other byte after the JSON was
  // taken (the reference reader refuses it; a CLI audit, forty-sixth round).
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw bad("header holds a NUL byte at offset " + std::to_string(8 + nul) + " (a header is JSON, padded with spaces)");
  // A name given twice would silently keep one of the two: find it while parsing.
  std::string duplicate;
  std::set<std::string> names;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      // A header nests three levels (tensors, their fields, a shape's dimensions); a value nested
      // tens of thousands deep overflowed the stack when a message printed it.
      if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) && depth > 3)
        throw bad("header nests values more than 4 levels deep (a safetensors header holds tensors, their fields and a shape's "
                  "dimensions: 3)");
      if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string() && !names.insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's words without its "[json.exception.parse_error.101] " tag (an exception's id
    // is nothing a user can act on); they say where and what was expected.
    std::string why = e.what();
    if (!why.empty() && why.front() == '[')
      if (const size_t close = why.find("] "); close != std::string::npos) why.erase(0, close + 2);
    throw bad("header is not valid JSON: " + shown(why));
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  if (!duplicate.empty()) throw bad("header names '" + shown(duplicate) + "' twice (expected each tensor once)");
  const uint64_t data_start = 8 + len, data_size = size - data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& e = *it;
    if (name == "__metadata__") {
      if (!e.is_object()) throw bad("field '__metadata__': expected an object of strings, got " + std::string(e.type_name()));
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m->is_string()) throw bad("field '__metadata__." + m.key() + "': expected a string, got " + std::string(m->type_name()));
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const std::string field = "tensor '" + shown(name) + "'";
    if (!e.is_object()) throw bad(field + ": expected an object {dtype, shape, data_offsets}, got " + std::string(e.type_name()));
    for (auto k = e.begin(); k != e.end(); ++k)
      if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets")
        throw bad(field + ": unknown field '" + k.key() + "' (expected dtype, shape, data_offsets)");
    if (!e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      throw bad(field + ": missing " + (!e.contains("dtype") ? "dtype" : !e.contains("shape") ? "shape" : "data_offsets"));
    const nlohmann::json& dtype = e["dtype"];
    if (!dtype.is_string()) throw bad(field + ": field 'dtype': expected a string such as \"F32\", got " + brief(dtype));
    const auto known = known_dtypes().find(dtype.get<std::string>());
    if (known == known_dtypes().end()) throw bad(field + ": field 'dtype': " + brief(dtype) + " is not a safetensors dtype (F32, F16, BF16, I64, ...)");
    if (known->first != "F32") throw bad(field + ": field 'dtype': " + known->first + " is not supported (wse checkpoints hold F32 tensors)");
    TensorEntry t;
    t.name = name;
    const nlohmann::json& shape = e["shape"];
    if (!shape.is_array() || shape.size() > 8) throw bad(field + ": field 'shape': expected a list of at most 8 dimensions, got " + brief(shape));
    uint64_t numel = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      uint64_t d = 0;
      if (!whole(shape[i], UINT32_MAX, d))
        throw bad(field + ": field 'shape[" + std::to_string(i) + "]': " + brief(shape[i]) + " is not a dimension (expected a whole number below 2^32)");
      t.shape.push_back(uint32_t(d));
      numel = mul_sat(numel, d);
    }
    const nlohmann::json& off = e["data_offsets"];
    uint64_t begin = 0, end = 0;
    if (!off.is_array() || off.size() != 2 || !whole(off[0], UINT64_MAX, begin) || !whole(off[1], UINT64_MAX, end))
      throw bad(field + ": field 'data_offsets': expected [begin, end], got " + brief(off));
    if (begin > end || end > data_size)
      throw bad(field + ": field 'data_offsets': [" + std::to_string(begin) + ", " + std::to_string(end) + ") is not inside the " +
                std::to_string(data_size) + " data bytes");
    if (end - begin != mul_sat(numel, known->second))
      throw bad(field + ": field 'data_offsets': spans " + std::to_string(end - begin) + " bytes, but shape " + brief(shape) + " of " +
                known->first + " needs " + (numel == UINT64_MAX ? std::string("more than 2^64") : std::to_string(numel * known->second)));
    t.numel = size_t(numel);
    t.offset = data_start + begin;
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < tensors_.size(); ++i) {
    const TensorEntry &a = tensors_[i - 1], &b = tensors_[i];
    if (b.offset < a.offset + a.numel * sizeof(float) && b.numel && a.numel)
      throw bad("tensors '" + shown(a.name) + "' and '" + shown(b.name) + "' overlap in the data (expected each byte to belong to one tensor)");
  }
  // The data is the tensors' bytes and nothing more: bytes after the last (3 GB of them were
  // taken) are a damaged or a different file, as the reference reader says too.
  uint64_t data_end = 0;
  for (const TensorEntry& t : tensors_) data_end = std::max<uint64_t>(data_end, t.offset - data_start + t.numel * sizeof(float));
  if (data_size > data_end)
    throw bad(std::to_string(data_size - data_end) + " bytes after the last tensor's data (at byte " + std::to_string(data_start + data_end) +
              "; expected the file to end there)");
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
  if (!in) throw UsageError(where_ + ": truncated data for tensor '" + shown(t.name) + "'");
}

Checkpoint read_safetensors(const std::filesystem::path& path) {
  const SafetensorsFile file(path);
  uint64_t bytes = 0;
  for (const TensorEntry& e : file.tensors()) bytes += e.numel * sizeof(float);  // inside the file: no overflow
  check_memory(bytes, file.where());
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
