#pragma once
// SIGINT, SIGTERM and SIGHUP during training. The first one asks the run to stop at the end of
// the step in progress: the training loop then writes a checkpoint of that step (atomically, like
// every output), prints how to resume, and exits with 128 + the signal's number (130, 143, 129).
// During the final test pass it stops the pass at the batch in progress (every step has run:
// nothing to resume). A second one stops at once, as the default action would: no step is ever
// checkpointed half done. A signal the parent set to be ignored stays ignored.
namespace wse {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers (one guard at a time)
  ~InterruptGuard();  // restores what was there before
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // 0, or the first SIGINT / SIGTERM / SIGHUP received while the guard stood.
  int received() const;
  static const char* name(int sig);
  // From here on the run is in its final test pass: a signal's message says what stopping does
  // then (it said "finishing the step in progress, then writing a checkpoint", neither of which
  // happens in the pass).
  void entering_final_test_pass();
};

}  // namespace wse
