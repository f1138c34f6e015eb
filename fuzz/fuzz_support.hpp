#pragma once
// What every libFuzzer target here shares. A target feeds one reader arbitrary bytes; the reader
// may accept them or reject them with wse::UsageError (a clear message, exit code 2 in the CLI).
// Anything else (a crash, a sanitizer report, a leak, another exception escaping, a hang, an
// allocation past the limit) is a bug the fuzzer reports.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/memory_limit.hpp"

namespace wse::fuzz {

// Readers must refuse what would not fit in this much memory, well under libFuzzer's RSS limit,
// so a header that claims a huge size is a UsageError rather than an out-of-memory "crash".
constexpr uint64_t kMemoryLimit = uint64_t(256) << 20;

inline void init() {
  set_memory_limit(kMemoryLimit, "the fuzzer's limit");
  log_level() = LogLevel::Warning;
}

// A scratch directory of this process, for readers that take a path. Removed when the fuzzer
// exits (libFuzzer ends a bounded run with exit()): every run used to leave its directory behind
// in the temp folder. A crash leaves it, which is harmless: the input is in the artifacts.
inline const std::filesystem::path& scratch() {
  struct Dir {
    std::filesystem::path path;
    Dir() : path(std::filesystem::temp_directory_path() / ("wse-fuzz-" + std::to_string(getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;  // nothing to report at exit if it cannot be removed
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

inline std::filesystem::path write(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path p = scratch() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return p;
}

// Runs `fn`; a UsageError is the reader saying no, which is fine.
template <class Fn>
int expect_accept_or_usage_error(Fn&& fn) {
  try {
    fn();
  } catch (const UsageError&) {
  }
  return 0;
}

}  // namespace wse::fuzz
