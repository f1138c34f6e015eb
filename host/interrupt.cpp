#include "host/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "io/live_temporaries.hpp"

namespace wse {

namespace {

// A signal handler may only touch lock-free atomics and call async-signal-safe functions.
volatile sig_atomic_t g_received = 0;
volatile sig_atomic_t g_final_test_pass = 0;
volatile sig_atomic_t g_report = 0;
// The last checkpoint written, for the second signal's message: two buffers, the one not being
// read written and then made current, so the handler never prints a path half replaced.
constexpr size_t kPathBytes = 4096;
char g_checkpoint[2][kPathBytes] = {};
volatile sig_atomic_t g_checkpoint_at = 0;
// Set once the last step's checkpoint is written: nothing is left to resume.
volatile sig_atomic_t g_every_step = 0;
// The checkpoint named is the one --resume started from, not one this run wrote.
volatile sig_atomic_t g_resumed_from = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_old[3];
bool g_installed[3] = {false, false, false};

// Whether stderr is a terminal, where a progress line may be half drawn: read when the guard is
// made (isatty is not async-signal-safe), so a message starts on a line of its own there and a
// log gets no blank line.
volatile sig_atomic_t g_tty = 0;

void say(const char* text) {
  // write(2) is async-signal-safe; its result does not matter here.
  if (!g_tty && text[0] == '\n') ++text;
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int sig) {
  if (g_received) {
    // The second one: stop now, as if no handler were installed.
    if (g_every_step) {
      // Every step ran and its last checkpoint is written: --resume would say "nothing to
      // resume" (this said "resume from the last checkpoint written", naming that one).
      say("\nwse: stopping at once; every step ran and the last one's checkpoint is written, but the run's test score and report are lost "
          "(nothing is left to resume: run it again to get them): ");
      say(g_checkpoint[g_checkpoint_at]);
      [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, "\n", 1);  // (say() drops a leading newline off a terminal)
    } else if (g_checkpoint[g_checkpoint_at][0]) {
      say(g_resumed_from ? "\nwse: stopping at once; resume from the checkpoint this run resumed from (it wrote none): "
                         : "\nwse: stopping at once; resume from the last checkpoint written: ");
      say(g_checkpoint[g_checkpoint_at]);
      [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, "\n", 1);
    } else {
      say("\nwse: stopping at once; no checkpoint of this run was written\n");
    }
    remove_live_temporaries();  // a checkpoint half written, say
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_received = sig;
  if (g_report) {
    say(sig == SIGINT    ? "\nwse: SIGINT: the run has ended; writing its report, then exiting (send it again to stop at once)\n"
        : sig == SIGTERM ? "\nwse: SIGTERM: the run has ended; writing its report, then exiting (send it again to stop at once)\n"
                         : "\nwse: SIGHUP: the run has ended; writing its report, then exiting (send it again to stop at once)\n");
    return;
  }
  if (g_final_test_pass) {
    say(sig == SIGINT    ? "\nwse: SIGINT: stopping the final test pass at the batch in progress (it will not be scored; every step has its checkpoint)\n"
        : sig == SIGTERM ? "\nwse: SIGTERM: stopping the final test pass at the batch in progress (it will not be scored; every step has its checkpoint)\n"
                         : "\nwse: SIGHUP: stopping the final test pass at the batch in progress (it will not be scored; every step has its checkpoint)\n");
    return;
  }
  say(sig == SIGINT    ? "\nwse: SIGINT: finishing the step in progress, then writing a checkpoint (send it again to stop at once)\n"
      : sig == SIGTERM ? "\nwse: SIGTERM: finishing the step in progress, then writing a checkpoint (send it again to stop at once)\n"
                       : "\nwse: SIGHUP: finishing the step in progress, then writing a checkpoint (send it again to stop at once)\n");
}

}  // namespace

void InterruptGuard::entering_final_test_pass() { g_final_test_pass = 1; }

void InterruptGuard::entering_report() { g_report = 1; }

void InterruptGuard::set_last_checkpoint(const std::string& path, Written written) {
  const int next = 1 - g_checkpoint_at;
  const size_t n = std::min(path.size(), kPathBytes - 1);
  std::memcpy(g_checkpoint[next], path.data(), n);
  g_checkpoint[next][n] = '\0';
  // (Flags before the switch: a handler in between names the previous path in the new words,
  // never the final checkpoint as one to resume from.)
  g_resumed_from = written == Written::ResumedFrom;
  if (written == Written::LastStep) g_every_step = 1;
  g_checkpoint_at = next;
}

InterruptGuard::InterruptGuard() {
  g_received = 0;
  g_final_test_pass = 0;
  g_report = 0;
  g_every_step = 0;
  g_resumed_from = 0;
  g_checkpoint[0][0] = g_checkpoint[1][0] = '\0';
  g_tty = ::isatty(STDERR_FILENO) ? 1 : 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the engine's threads go on with their waits and writes
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    // A signal the parent set to be ignored (SIGINT for a background job of a non-interactive
    // shell, SIGHUP under nohup) stays ignored, as it is everywhere else in the program
    // (io/live_temporaries.cpp).
    sigaction(kSignals[i], nullptr, &g_old[i]);
    g_installed[i] = g_old[i].sa_handler != SIG_IGN;
    if (g_installed[i]) sigaction(kSignals[i], &sa, nullptr);
  }
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (g_installed[i]) sigaction(kSignals[i], &g_old[i], nullptr), g_installed[i] = false;
}

int InterruptGuard::received() const { return g_received; }

const char* InterruptGuard::name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

}  // namespace wse
