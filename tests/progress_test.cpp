// The training progress bar (host/progress.hpp), drawn on a pseudo-terminal as a user's terminal
// would show it: a resumed run's bar in the run's own step numbers (found by a long-run audit:
// "step 1265/1474" beside log lines at step 1665), a long step saying which pass it is on, and
// rates below one image a second in significant digits ("0 images/s" for a step of 206 s).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <thread>

#include "host/progress.hpp"

namespace wse {
namespace {

TEST(Progress, RatesAndLossesReadAsNumbers) {
  EXPECT_EQ(rate_text(1151.4), "1151");
  EXPECT_EQ(rate_text(48.31), "48.3");
  EXPECT_EQ(rate_text(1.0 / 206), "0.00485");
  EXPECT_EQ(rate_text(0), "0");
  EXPECT_EQ(loss_text(2.30471), "2.3047");
  EXPECT_EQ(loss_text(std::numeric_limits<double>::quiet_NaN()), "not finite");
}

// stderr on a pseudo-terminal for the test's length; what was drawn is read from its other end.
class OnATerminal {
 public:
  explicit OnATerminal(unsigned short columns = 120) {
    winsize size{};
    size.ws_row = 24, size.ws_col = columns;
    if (openpty(&master_, &slave_, nullptr, nullptr, &size) != 0) return;
    fcntl(master_, F_SETFL, O_NONBLOCK);
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    dup2(slave_, STDERR_FILENO);
  }
  ~OnATerminal() {
    std::fflush(stderr);
    if (saved_ >= 0) dup2(saved_, STDERR_FILENO), close(saved_);
    if (slave_ >= 0) close(slave_);
    if (master_ >= 0) close(master_);
  }
  bool ok() const { return saved_ >= 0; }
  std::string drawn() {
    std::fflush(stderr);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(master_, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
    return out;
  }

 private:
  int master_ = -1, slave_ = -1, saved_ = -1;
};

TEST(Progress, AResumedRunsBarCountsTheRunsStepsAndALongStepSaysWhatItIsOn) {
  OnATerminal term;
  ASSERT_TRUE(term.ok());
  // A run resumed after step 400 of 1874: this run takes 1474 steps.
  Progress bar(1474, 64, 400);
  bar.step(1, 0.3612, 1);
  std::string text = term.drawn();
  EXPECT_NE(text.find("] step 401/1874  epoch 1  loss 0.3612"), std::string::npos) << text;
  EXPECT_EQ(text.find("step 1/1474"), std::string::npos) << text;
  // Within the next step: nothing in its first second, then the pass and the wafer cycle.
  bar.busy("fc2 bwd", 1000);
  EXPECT_EQ(term.drawn().find("fc2 bwd"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  bar.busy("fc2 bwd", 123456);
  text = term.drawn();
  EXPECT_NE(text.find("step 402/1874  fc2 bwd at cycle 123456, 1s in"), std::string::npos) << text;
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // (at most five drawings a second)
  bar.busy("fc1 fwd", 7, "test pass");
  text = term.drawn();
  EXPECT_NE(text.find("test pass  fc1 fwd at cycle 7"), std::string::npos) << text;
  bar.clear();
}

// Found by the verification of this round: the bar (about 100 columns) wrapped on an 80-column
// terminal, and each redraw's carriage return went back only to its second row, leaving the first
// behind: a screen of stale bars. Each drawing is cut to the terminal's width.
TEST(Progress, ALineIsCutToTheTerminalsWidth) {
  OnATerminal term(80);
  ASSERT_TRUE(term.ok());
  Progress bar(874, 64, 1000);  // after step 1000 of 1874: 1001 of 1874 is 16 of the bar's 30
  bar.step(1, 0.3612, 2);
  const std::string text = term.drawn();
  const size_t at = text.rfind("\033[K");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at + 3);
  EXPECT_EQ(line.size(), 79u) << line;
  EXPECT_EQ(line.rfind("  [################..............] step 1001/1874  epoch 2  loss 0.3612", 0), 0u) << line;
}

// A GEMV's or a reduce's run has no known length: its line showed "cycle 1234567 ..." and nothing
// of whether it would take a minute or an hour. It now gives the time in and the pace, both from
// the run's start (the engine's first call; a traced layer starts after the others ran), and the
// limit the run would stop at. Times are the test's own: a loaded host cannot move them.
TEST(CycleLine, SaysTheTimeInThePaceAndTheLimit) {
  OnATerminal term;
  ASSERT_TRUE(term.ok());
  using std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::now();
  CycleLine line(100'000'000);
  line.at(5000, t0);
  std::string text = term.drawn();
  EXPECT_NE(text.find("cycle 5000 (max_cycles 100000000)  0s in"), std::string::npos) << text;
  EXPECT_EQ(text.find("cycles/s"), std::string::npos) << text;  // no pace from one call
  line.at(5000 + 2'000'000, t0 + milliseconds(1250));  // 2 M cycles in 1.25 s
  text = term.drawn();
  EXPECT_NE(text.find("cycle 2005000 (max_cycles 100000000)  1s in  1600000 cycles/s"), std::string::npos) << text;
  line.at(2'100'000, t0 + milliseconds(1400));  // within a fifth of a second of the last drawing: not drawn
  EXPECT_EQ(term.drawn().find("2100000"), std::string::npos);
  line.at(62'005'000, t0 + milliseconds(61250));  // 62 M in 61.25 s
  EXPECT_NE(term.drawn().find("cycle 62005000 (max_cycles 100000000)  1m01s in  1012245 cycles/s"), std::string::npos);
  CycleLine unbounded;
  unbounded.at(7, t0);
  EXPECT_NE(term.drawn().find("cycle 7  0s in"), std::string::npos);
}

}  // namespace
}  // namespace wse
