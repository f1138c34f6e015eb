// An edge port's rate and when a stream's words reach the wafer edge (fabric/edge_port.hpp),
// against exact arithmetic: a port never passes a wavelet before the rate it stands for allows,
// and a word off a slow off-wafer link is there only once its last byte has arrived.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fabric/edge_port.hpp"

namespace wse {
namespace {

// A rate computed as a ratio of integers (as the I/O share and the streams' interleaving are)
// is that ratio exactly: the k-th slot is ceil(k * q / p).
TEST(PortRate, ARatioComputedInDoublesIsThatRatioExactly) {
  struct Case {
    double rate;
    uint64_t p, q;
  };
  // 1/37: one wavelet every 37 cycles (Determinism.WaveletsCrossingBlocksArriveOnTimeAfterIdleGaps);
  // 176.47 / 4 / 750: WSE-2's I/O (176.47 bytes a cycle) over 750 ports; a MemoryX link of 1e-4 bytes a cycle shared by 3
  // of 7 words.
  const Case cases[] = {{4.0 / 37 / 4.0, 1, 37}, {176.47 / 4.0 / 750, 17647, 300000}, {1e-4 / 4.0 * 3.0 / 7.0, 3, 280000},
                        {0.75, 3, 4}, {1.0 / 3, 1, 3}};
  for (const Case& c : cases) {
    const PortRate r = PortRate::from(c.rate);
    for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(36), uint64_t(37), uint64_t(1000), uint64_t(123456789),
                       uint64_t(1) << 40})
      EXPECT_EQ(r.slot(k), (k * c.q + c.p - 1) / c.p) << "rate " << c.rate << ", k " << k;
  }
}

// Any other rate is rounded down, never up: slot k is at or after k / rate, and at most a cycle
// plus 2^-30 of it later. The rounding to the nearest 2^-20 this replaced let a port at 1e-7
// wavelets a cycle pass its k-th wavelet at k x 2^20 cycles, ten times too soon.
TEST(PortRate, AnyOtherRateIsNeverExceeded) {
  const double rates[] = {1e-7, 2.5e-10, 0.1234567891234, std::nextafter(1.0, 0.0), 3.0e-3 / 7.0 * 1.000000001};
  for (double rate : rates) {
    const PortRate r = PortRate::from(rate);
    EXPECT_LE(static_cast<long double>(r.num) / static_cast<long double>(r.den), static_cast<long double>(rate) * (1 + std::ldexp(1.0L, -48)))
        << rate;
    for (uint64_t k : {uint64_t(1), uint64_t(3), uint64_t(1000), uint64_t(987654321)}) {
      const long double exact = static_cast<long double>(k) / static_cast<long double>(rate);
      EXPECT_GE(static_cast<long double>(r.slot(k)), exact * (1 - std::ldexp(1.0L, -47))) << "rate " << rate << ", k " << k;
      EXPECT_LE(static_cast<long double>(r.slot(k)), exact * (1 + std::ldexp(1.0L, -30)) + 1) << "rate " << rate << ", k " << k;
    }
  }
  EXPECT_EQ(PortRate::from(1.0).slot(5), 5u);
  EXPECT_EQ(PortRate::from(3.5).slot(5), 5u);  // a port passes at most a wavelet a cycle
}

// The first byte arrives in cycle `first`; the k-th word is there in the cycle its last byte
// arrives, first + ceil((k + 1) / rate) - 1 (worked by hand), head and tail each from their own
// first cycle.
TEST(EdgeArrival, AWordIsThereInTheCycleItsLastByteArrives) {
  EdgeArrival a;
  a.head_first = 100, a.head_words = 3, a.tail_first = 1000;
  a.rate = PortRate::from(0.25);  // a word every 4 cycles: bytes of word k arrive in 4k .. 4k + 3
  EXPECT_EQ(a.at(0), 103u);
  EXPECT_EQ(a.at(1), 107u);
  EXPECT_EQ(a.at(2), 111u);
  EXPECT_EQ(a.at(3), 1003u);  // the tail's first word
  EXPECT_EQ(a.at(4), 1007u);
  a.rate = PortRate::from(1.0);  // a word a cycle: word k in cycle first + k
  EXPECT_EQ(a.at(0), 100u);
  EXPECT_EQ(a.at(2), 102u);
  EXPECT_EQ(a.at(3), 1000u);
  a.rate = PortRate::from(1.0 / 3);
  EXPECT_EQ(a.at(0), 102u);
  EXPECT_EQ(a.at(1), 105u);
}

// An egress port passes wavelets at its rate however they reach it: under steady pressure the
// closed form start + ceil(k * den / num); after an idle stretch, the first passes at once and
// the next waits out the link's den / num cycles again (the slot was the closed form of k alone,
// so the late ones went back to back, a wavelet a cycle: a review, forty-fifth round).
TEST(EgressPort, AnIdlePortBanksNothing) {
  EgressPort port({0, 0}, Dir::East);
  port.set_rate(PortRate{2, 3});  // two wavelets every 3 cycles
  port.restart(10);
  // Steady pressure: a wavelet offered every cycle passes in 10, 12, 13, 15, 16 (= 10 + ceil(3k / 2)).
  std::vector<Cycle> passed;
  for (Cycle now = 10; passed.size() < 5; ++now)
    if (port.can_accept(now)) {
      port.accept(now, now + 1, Wavelet{});
      passed.push_back(now);
    }
  EXPECT_EQ(passed, (std::vector<Cycle>{10, 12, 13, 15, 16}));
  // Idle until 100, then pressure again: 100, 102, 103, 105 (never 100, 101, 102, 103).
  passed.clear();
  EXPECT_TRUE(port.can_accept(100));
  for (Cycle now = 100; passed.size() < 4; ++now)
    if (port.can_accept(now)) {
      port.accept(now, now + 1, Wavelet{});
      passed.push_back(now);
    }
  EXPECT_EQ(passed, (std::vector<Cycle>{100, 102, 103, 105}));
  // A quarter rate: one every 4 cycles whenever the wavelets come.
  EgressPort slow({0, 0}, Dir::South);
  slow.set_rate(PortRate{1, 4});
  slow.restart(0);
  slow.accept(50, 51, Wavelet{});
  EXPECT_FALSE(slow.can_accept(53));
  EXPECT_TRUE(slow.can_accept(54));
  EXPECT_EQ(slow.received().back().cycle, 51u);
}

}  // namespace
}  // namespace wse
