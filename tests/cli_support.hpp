#pragma once
// Running a command line (the `wse` binary, a script) from a test: its exit code and output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "scratch.hpp"

namespace wse::test {

struct Output {
  int code;
  std::string text;
};

// Runs `command` through the shell with stderr folded into stdout.
inline Output shell(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string text;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) text.append(buf.data(), n);
  const int status = pclose(p);
  return {WEXITSTATUS(status), text};
}

// A scratch folder for one test program, in the process's own (scratch.hpp).
inline std::filesystem::path scratch_dir(const std::string& name) {
  std::filesystem::path d = process_scratch() / name;
  std::filesystem::create_directories(d);
  return d;
}

// A path for a command's --out that holds nothing yet (wse refuses a non-empty one).
inline std::filesystem::path fresh_dir(const std::filesystem::path& d) {
  std::filesystem::remove_all(d);
  return d;
}

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

#ifdef WSE_BINARY
inline Output wse(const std::string& args) { return shell(std::string(WSE_BINARY) + " " + args); }
#endif

}  // namespace wse::test
