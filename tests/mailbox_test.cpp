// The mailbox a worker posts wakes of another worker's tiles to (fabric/scheduler.hpp): what is
// posted comes out once, in order; a ring written past the two cycles' worth it is sized for is
// reported by the owner instead of read; and with two threads passing the engine's barrier
// between a cycle's posts and the owner's drain, as the engine does, every wake arrives by the
// cycle after its own. Run under ThreadSanitizer in CI with the engine's other concurrency tests.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fabric/cycle_barrier.hpp"
#include "fabric/scheduler.hpp"

namespace wse {
namespace {

std::vector<Wake> drain(Mailbox& m) {
  m.publish();
  std::vector<Wake> got;
  m.take_all([&](const Wake& w) { got.push_back(w); });
  return got;
}

TEST(Mailbox, WhatIsPostedComesOutOnceInOrderAcrossTheRingsEnd) {
  Mailbox m(3);  // three a cycle: a ring of 8
  uint64_t next = 0;
  for (uint64_t round = 0; round < 10; ++round) {  // 10 x 5 posts: the ring wraps several times
    for (int k = 0; k < 5; ++k) m.post({TileId(next % 1000), next}), ++next;
    const std::vector<Wake> got = drain(m);
    ASSERT_EQ(got.size(), 5u);
    for (int k = 0; k < 5; ++k) {
      const uint64_t want = next - 5 + uint64_t(k);
      EXPECT_EQ(got[size_t(k)].cycle, want);
      EXPECT_EQ(got[size_t(k)].tile, TileId(want % 1000));
    }
    EXPECT_TRUE(drain(m).empty());
  }
}

TEST(Mailbox, PostsBeyondTwoCyclesWorthAreReportedNotRead) {
  Mailbox m(3);  // sized for 3 a cycle; the ring holds 8
  for (uint64_t i = 0; i < 8; ++i) m.post({TileId(i), i});
  EXPECT_EQ(drain(m).size(), 8u);  // full, but not past it
  for (uint64_t i = 0; i < 9; ++i) m.post({TileId(i), i});
  EXPECT_THROW(drain(m), std::logic_error);
}

TEST(Mailbox, TwoWorkersTakeEveryWakeInOrderByTheCycleAfterItsOwn) {
  constexpr uint64_t kCycles = 20000;
  for (uint32_t posts : {1u, 5u, 17u}) {
    Mailbox to0(posts), to1(posts);
    CycleBarrier barrier(2);
    std::atomic<int> bad{0};
    auto body = [&](unsigned w) {
      Mailbox& out = w ? to0 : to1;
      Mailbox& in = w ? to1 : to0;
      uint64_t taken = 0;
      auto take = [&](const Wake& m) {
        if (m.tile != TileId(taken % posts + 100 * (1 - w)) || m.cycle != taken / posts) ++bad;
        ++taken;
      };
      CycleVote v;
      for (uint64_t c = 0; c < kCycles; ++c) {
        for (uint32_t k = 0; k < posts; ++k) out.post({TileId(k + 100 * w), c});
        v.next = c + 1, v.last = c;
        out.publish();
        barrier.arrive(w, v);
        in.take_all(take);  // the other may be posting the next cycle's meanwhile
        if (taken < (c + 1) * posts) ++bad;
      }
      out.publish();
      barrier.arrive(w, v);
      in.take_all(take);
      if (taken != kCycles * posts) ++bad;
    };
    std::thread other(body, 1);
    body(0);
    other.join();
    EXPECT_EQ(bad.load(), 0) << posts << " posts a cycle";
  }
}

}  // namespace
}  // namespace wse
