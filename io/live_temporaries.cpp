// A fixed table of slots, claimed with a compare-and-swap (several threads write files at once)
// and read by the handler only when marked live, so the handler never sees half a path.
#include "io/live_temporaries.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace wse {

namespace {

constexpr int kSlots = 64;
constexpr size_t kNameBytes = 256;  // NAME_MAX + 1: a file name, whatever the length of its folder's path
enum : int { kFree = 0, kFilling = 1, kLive = 2 };

// The temporary's folder, held open, and its name in it: the handler unlinks with unlinkat(2), so a
// path of any length is removed (a path of 1,024 bytes or more was not registered, and a signal
// left its temporary behind).
struct Slot {
  std::atomic<int> state{kFree};
  int dir_fd = -1;
  char name[kNameBytes];
};
Slot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the handler reads these");

void on_fatal_signal(int sig) {
  remove_live_temporaries();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

int register_temporary(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const char* name = slash ? slash + 1 : path;
  const size_t n = std::strlen(name);
  if (n == 0 || n >= kNameBytes) return -1;  // no such file can be created either
  const std::string dir = slash ? std::string(path, size_t(slash - path) + 1) : std::string(".");
  const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;  // the folder is missing: creating the temporary fails too
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) continue;
    g_slots[i].dir_fd = fd;
    std::memcpy(g_slots[i].name, name, n + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);
    return i;
  }
  ::close(fd);
  return -1;
}

void release_temporary(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  const int fd = g_slots[slot].dir_fd;
  g_slots[slot].state.store(kFree, std::memory_order_release);
  ::close(fd);
}

void remove_live_temporaries() {
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kLive) ::unlinkat(s.dir_fd, s.name, 0);
}

void remove_on_fatal_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A signal the shell ignores (nohup, a background job's SIGINT) stays ignored.
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace wse
