#pragma once
// Runs a test body in a child process whose `ulimit -v` (RLIMIT_AS) leaves `room` bytes beyond
// what the process maps now: the memory checks read that limit, and the test process's own must
// stay unlimited. Returns the body's exit code, 3 when the limit could not be set, or -1 when the
// child did not exit.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

namespace wse::test {

inline int with_address_space_room(uint64_t room, const std::function<int()>& body) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    std::ifstream status("/proc/self/status");
    uint64_t mapped_kib = 0;
    for (std::string key; status >> key;)
      if (key == "VmSize:") {
        status >> mapped_kib;
        break;
      }
    rlimit r{};
    r.rlim_cur = r.rlim_max = rlim_t(mapped_kib * 1024 + room);
    if (mapped_kib == 0 || setrlimit(RLIMIT_AS, &r) != 0) _exit(3);
    _exit(body());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace wse::test
