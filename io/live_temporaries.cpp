// A fixed table of slots, claimed with a compare-and-swap (several threads write files at once)
// and read by the handler only when marked live, so the handler never sees half a path.
#include "io/live_temporaries.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace wse {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 1024;
enum : int { kFree = 0, kFilling = 1, kLive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
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
  const size_t n = std::strlen(path);
  if (n >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) continue;
    std::memcpy(g_slots[i].path, path, n + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void release_temporary(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

void remove_live_temporaries() {
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kLive) ::unlink(s.path);
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
