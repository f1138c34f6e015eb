#include "host/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "io/live_temporaries.hpp"

namespace wse {

namespace {

// A signal handler may only touch lock-free atomics and call async-signal-safe functions.
volatile sig_atomic_t g_received = 0;
struct sigaction g_old_int, g_old_term;

void say(const char* text) {
  // write(2) is async-signal-safe; its result does not matter here.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int sig) {
  if (g_received) {
    // The second one: stop now, as if no handler were installed.
    say("\nwse: stopping at once; the last checkpoint written is the one to resume from\n");
    remove_live_temporaries();  // a checkpoint half written, say
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_received = sig;
  say(sig == SIGINT ? "\nwse: SIGINT: finishing the step in progress, then writing a checkpoint (send it again to stop at once)\n"
                    : "\nwse: SIGTERM: finishing the step in progress, then writing a checkpoint (send it again to stop at once)\n");
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_received = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the engine's threads go on with their waits and writes
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int InterruptGuard::received() const { return g_received; }

const char* InterruptGuard::name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace wse
