#include "host/progress.hpp"

#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace wse {

std::string loss_text(double loss) {
  if (!std::isfinite(loss)) return "not finite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", loss);
  return buf;
}

std::string rate_text(double per_second) {
  char buf[32];
  std::snprintf(buf, sizeof buf, per_second >= 100 ? "%.0f" : "%.3g", per_second);
  return buf;
}

Progress::Progress(uint64_t total_steps, uint32_t batch, uint64_t before)
    : total_(total_steps),
      batch_(batch),
      before_(before),
      tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      step_began_(start_) {}

namespace {

// Seconds as "1h02m", "3m05s" or "12s".
std::string duration_text(uint64_t secs) {
  char buf[32];
  if (secs >= 3600) std::snprintf(buf, sizeof buf, "%lluh%02llum", (unsigned long long)(secs / 3600), (unsigned long long)(secs % 3600 / 60));
  else if (secs >= 60) std::snprintf(buf, sizeof buf, "%llum%02llus", (unsigned long long)(secs / 60), (unsigned long long)(secs % 60));
  else std::snprintf(buf, sizeof buf, "%llus", (unsigned long long)secs);
  return buf;
}

// "[#####.........]": `done` of `total` over 30 characters.
std::string bar_text(uint64_t done, uint64_t total) {
  constexpr int kWidth = 30;
  const int filled = total ? int(double(done) / double(total) * kWidth) : kWidth;
  std::string bar = "[";
  for (int i = 0; i < kWidth; ++i) bar += i < filled ? '#' : '.';
  return bar + "]";
}

// The terminal's width in columns (80 when it does not say).
size_t columns() {
  winsize w{};
  return ioctl(fileno(stderr), TIOCGWINSZ, &w) == 0 && w.ws_col > 0 ? w.ws_col : 80;
}

// Draws `line` in place of the last, cut to the terminal's width: a line that wraps leaves its
// first row behind at every redraw (the bar is about 100 columns; an 80-column terminal filled
// with stale rows).
void draw(std::string text) {
  const size_t room = columns() - 1;
  if (text.size() > room) text.resize(room);
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

}  // namespace

std::string Progress::eta(uint64_t done, uint64_t total) const {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (done == 0) return "?";
  return duration_text(uint64_t(secs / double(done) * double(total - std::min(done, total)) + 0.5));
}

void Progress::show(const char* line) {
  draw(line);
  shown_ = true;
}

void Progress::step(uint64_t done, double loss, uint64_t epoch) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  done_ = done, step_began_ = now;
  if (shown_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const uint64_t run_done = before_ + done, run_total = before_ + total_;  // the run's own step numbers
  char line[256];
  std::snprintf(line, sizeof line, "  %s step %llu/%llu  epoch %llu  loss %s  %s images/s  ETA %s", bar_text(run_done, run_total).c_str(),
                (unsigned long long)run_done,
                (unsigned long long)run_total, (unsigned long long)epoch, loss_text(loss).c_str(),
                rate_text(secs > 0 ? double(done) * batch_ / secs : 0.0).c_str(), eta(done).c_str());
  show(line);
}

void Progress::busy(const std::string& what, uint64_t cycle, const char* phase) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - step_began_ < std::chrono::seconds(1) || (shown_ && now - last_draw_ < std::chrono::milliseconds(200))) return;
  last_draw_ = now;
  const uint64_t in_step = uint64_t(std::chrono::duration<double>(now - step_began_).count());
  const uint64_t run_done = before_ + done_, run_total = before_ + total_;
  char doing[48];
  if (phase) std::snprintf(doing, sizeof doing, "%.20s", phase);
  else std::snprintf(doing, sizeof doing, "step %llu/%llu", (unsigned long long)(run_done + 1), (unsigned long long)run_total);
  char line[256];
  std::snprintf(line, sizeof line, "  %s %s  %.24s at cycle %llu, %s in", bar_text(run_done, run_total).c_str(), doing, what.c_str(),
                (unsigned long long)cycle, duration_text(in_step).c_str());
  show(line);
}

CycleLine::CycleLine(uint64_t limit) : limit_(limit), tty_(isatty(fileno(stderr)) != 0) {}

void CycleLine::at(uint64_t cycle, std::chrono::steady_clock::time_point now) {
  if (!tty_) return;
  if (!started_) started_ = true, start_ = now, first_ = cycle;  // the run's start (a traced layer's, after the others ran)
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  char limit[48] = "";
  if (limit_) std::snprintf(limit, sizeof limit, " (max_cycles %llu)", (unsigned long long)limit_);  // a bound, not the run's end
  char pace[48] = "";
  if (secs > 0 && cycle > first_) std::snprintf(pace, sizeof pace, "  %s cycles/s", rate_text(double(cycle - first_) / secs).c_str());
  char line[256];
  std::snprintf(line, sizeof line, "  cycle %llu%s  %s in%s", (unsigned long long)cycle, limit, duration_text(uint64_t(secs)).c_str(), pace);
  draw(line);
  shown_ = true;
}

void Progress::clear() {
  if (!tty_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace wse
