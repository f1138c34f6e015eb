#include "io/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/errors.hpp"
#include "io/memory_limit.hpp"

namespace wse {

void check_regular_input(const std::filesystem::path& path, const std::string& where) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  // A link loop, or a folder on the way that may not be searched, is not "not found".
  if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR) throw UsageError(where + ": cannot look it up: " + ec.message());
  if (!std::filesystem::exists(st)) throw UsageError(where + ": file not found");
  if (std::filesystem::is_directory(st)) throw UsageError(where + ": not a regular file (a directory); name a file");
  if (!std::filesystem::is_regular_file(st)) throw UsageError(where + ": not a regular file (a device, pipe or socket)");
}

std::vector<uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what, uint64_t max_bytes) {
  const std::string where = what + " " + path.string();
  check_regular_input(path, where);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw UsageError(where + ": cannot read its size: " + ec.message());
  if (size > max_bytes)
    throw UsageError(where + ": " + std::to_string(size) + " bytes, more than such a file can hold (" + std::to_string(max_bytes) + ")");
  check_memory(size, where);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(where + ": cannot open it: " + std::strerror(errno));
  std::vector<uint8_t> bytes(size);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size)) || uint64_t(in.gcount()) != size)
    throw UsageError(where + ": read failed (changed while being read?)");
  return bytes;
}

}  // namespace wse
