#pragma once
// The progress bar of a long training run: on a terminal, one line on stderr redrawn at most five
// times a second ([#####.....] step, epoch, the loss, images per second, ETA; within a long step,
// the pass it is on and its wafer cycle); off a terminal
// (a log file, CI) nothing, and the run's periodic log lines carry the same figures. `wse viz`
// uses its clock and ETA for its own line (pictures drawn). CycleLine is the line of a run whose
// length is not known before it ends (`wse run` of a GEMV or a reduce, `wse trace`).
#include <chrono>
#include <cstdint>
#include <string>

namespace wse {

// A loss as the log prints it: four decimals, or "not finite" (printf's "-nan" read as a number).
std::string loss_text(double loss);
// A rate (images a second): whole above 100, else three significant digits (a step of 206 s on
// one image was "0 images/s").
std::string rate_text(double per_second);

class Progress {
 public:
  // `total_steps` this run takes, after `before` steps an earlier run took (a resumed run's
  // checkpoint): the bar shows the run's own step numbers, as the log lines and checkpoints do
  // ("step 401/1874", not "1/1474"); the rate and the ETA are this run's.
  Progress(uint64_t total_steps, uint32_t batch, uint64_t before = 0);
  // After step `done` (of this run, from 1).
  void step(uint64_t done, double loss, uint64_t epoch);
  // Within a step, from the cycle-level run of `what` ("fc2 bwd") at wafer cycle `cycle`: once
  // the step has run a second, the bar says what it is on, at most five times a second (a step of
  // examples/fc_275m.yaml takes minutes, and showed nothing in them). Called by one thread at a
  // time (wafer 0's engine, inside train_step: nothing else prints then).
  // `phase`: what the wafers run other than a step ("test pass"), or null for the next step.
  void busy(const std::string& what, uint64_t cycle, const char* phase = nullptr);
  // Erases the bar, so a log line can be printed in its place.
  void clear();
  // Time left at the pace so far, as "1h02m", "3m05s" or "12s".
  std::string eta(uint64_t done) const { return eta(done, total_); }
  // The same for a count whose total is known only as it goes (pictures drawn).
  std::string eta(uint64_t done, uint64_t total) const;

 private:
  void show(const char* line);  // draws `line` in the bar's place, cut to the terminal's width

  uint64_t total_;
  uint32_t batch_;
  uint64_t before_;
  bool tty_;
  bool shown_ = false;
  uint64_t done_ = 0;  // the last step() call's
  std::chrono::steady_clock::time_point start_, last_draw_, step_began_;
};

// The progress line of a mesh run whose length is known only when it ends: the wafer cycle it has
// reached, the time it has run, its pace in wafer cycles a second and the cycle limit it would
// stop at. With no total there is no ETA; the pace and the limit give the worst case (a run that
// showed only "cycle 1234567 ..." said nothing of whether it would take a minute or an hour).
// On a terminal only, at most five drawings a second.
class CycleLine {
 public:
  // `limit`: the run's cycle limit (max_cycles), 0 when it has none to show.
  explicit CycleLine(uint64_t limit = 0);
  // The engine's progress hook: `cycle` at the run's start (the clock starts then), then every
  // 256 stepped cycles or so.
  void at(uint64_t cycle) { at(cycle, std::chrono::steady_clock::now()); }
  void at(uint64_t cycle, std::chrono::steady_clock::time_point now);  // (tests: a time of their own)

 private:
  uint64_t limit_;
  bool tty_;
  bool shown_ = false, started_ = false;
  uint64_t first_ = 0;  // the cycle of the first call, when the clock starts
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace wse
