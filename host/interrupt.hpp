#pragma once
// SIGINT, SIGTERM and SIGHUP during training. The first one asks the run to stop at the end of
// the step in progress: the training loop then writes a checkpoint of that step (atomically, like
// every output), prints how to resume, and exits with 128 + the signal's number (130, 143, 129).
// During the final test pass it stops the pass at the batch in progress (every step has run:
// nothing to resume). A second one stops at once, as the default action would: no step is ever
// checkpointed half done. A signal the parent set to be ignored stays ignored.
#include <string>

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
  // From here on the run has ended and its report is being written: a first signal waits for it
  // (a signal there had ended the process with no report.json, and the run, every step done,
  // could not be resumed to get it), a second stops at once.
  void entering_report();
  // The checkpoint a second signal's message names as the one to resume from (with --overwrite
  // the folder may also hold a previous run's later checkpoints, which are not): one this run
  // wrote, the one --resume started from, or the last step's, after which nothing is left to
  // resume and the message says what a second signal loses (the test score and the report).
  enum class Written { ByThisRun, ResumedFrom, LastStep };
  void set_last_checkpoint(const std::string& path, Written written = Written::ByThisRun);
};

}  // namespace wse
