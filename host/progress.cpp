#include "host/progress.hpp"

#include <cmath>

#include <unistd.h>

#include <cstdio>

namespace wse {

std::string loss_text(double loss) {
  if (!std::isfinite(loss)) return "not finite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", loss);
  return buf;
}

Progress::Progress(uint64_t total_steps, uint32_t batch)
    : total_(total_steps), batch_(batch), tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta(uint64_t done, uint64_t total) const {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (done == 0) return "?";
  const uint64_t left = uint64_t(secs / double(done) * double(total - std::min(done, total)) + 0.5);
  char buf[32];
  if (left >= 3600) std::snprintf(buf, sizeof buf, "%lluh%02llum", (unsigned long long)(left / 3600), (unsigned long long)(left % 3600 / 60));
  else if (left >= 60) std::snprintf(buf, sizeof buf, "%llum%02llus", (unsigned long long)(left / 60), (unsigned long long)(left % 60));
  else std::snprintf(buf, sizeof buf, "%llus", (unsigned long long)left);
  return buf;
}

void Progress::step(uint64_t done, double loss, uint64_t epoch) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 30;
  const int filled = total_ ? int(double(done) / double(total_) * kWidth) : kWidth;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = 0;
  std::fprintf(stderr, "\r  [%s] step %llu/%llu  epoch %llu  loss %s  %.0f images/s  ETA %s   ", bar, (unsigned long long)done,
               (unsigned long long)total_, (unsigned long long)epoch, loss_text(loss).c_str(), secs > 0 ? double(done) * batch_ / secs : 0.0, eta(done).c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (!tty_ || !shown_) return;
  std::fprintf(stderr, "\r%*s\r", 110, "");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace wse
