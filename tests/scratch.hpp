#pragma once
// The scratch folder of one test process: `wse-test-<pid>` under the system's temp folder, made
// on first use and removed, with everything in it, when the process exits. ctest runs every test
// case as a process of its own, several at once, so a fixed name under the temp folder was shared
// by whatever ran beside it (another case, another checkout's tests), and the names that held a
// pid were left behind by every run (viz_png_test had left 200 folders). Set WSE_KEEP_TEST_FILES
// to keep the folder for a look after a failure; its path is printed then.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace wse::test {

inline const std::filesystem::path& process_scratch() {
  struct Dir {
    pid_t owner = getpid();
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("wse-test-" + std::to_string(owner));
    Dir() {
      std::filesystem::remove_all(path);  // a pid reused after a crashed run's folder was left
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      // Only the process that made it: a forked child that exits must not take its parent's files.
      if (getpid() != owner) return;
      if (std::getenv("WSE_KEEP_TEST_FILES")) {
        std::fprintf(stderr, "test files kept in %s\n", path.c_str());
        return;
      }
      std::error_code ec;  // nothing to report at exit if it cannot be removed
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// A path in this process's scratch folder (its parent folder made).
inline std::filesystem::path scratch_file(const std::filesystem::path& name) {
  std::filesystem::path p = process_scratch() / name;
  std::filesystem::create_directories(p.parent_path());
  return p;
}

}  // namespace wse::test
