#pragma once
// The progress bar of a long training run: on a terminal, one line on stderr redrawn at most five
// times a second ([#####.....] step, epoch, the loss, images per second, ETA); off a terminal
// (a log file, CI) nothing, and the run's periodic log lines carry the same figures. `wse viz`
// uses its clock and ETA for its own line (pictures drawn).
#include <chrono>
#include <cstdint>
#include <string>

namespace wse {

// A loss as the log prints it: four decimals, or "not finite" (printf's "-nan" read as a number).
std::string loss_text(double loss);

class Progress {
 public:
  Progress(uint64_t total_steps, uint32_t batch);
  // After step `done` (of this run, from 1).
  void step(uint64_t done, double loss, uint64_t epoch);
  // Erases the bar, so a log line can be printed in its place.
  void clear();
  // Time left at the pace so far, as "1h02m", "3m05s" or "12s".
  std::string eta(uint64_t done) const { return eta(done, total_); }
  // The same for a count whose total is known only as it goes (pictures drawn).
  std::string eta(uint64_t done, uint64_t total) const;

 private:
  uint64_t total_;
  uint32_t batch_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace wse
