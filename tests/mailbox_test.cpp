// The mailbox a worker posts wakes of another worker's tiles to (fabric/scheduler.hpp): what is
// posted comes out once, in order, every field of it (as Scheduler::post_flit and post_credit
// store them, one by one); a ring written past the two cycles' worth it is sized for is
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

// Everything posted so far, as the owner takes it once the poster's count is in (with its vote).
std::vector<Wake> drain(Mailbox& m) {
  std::vector<Wake> got;
  m.take_until(m.posted(), [&](const Wake& w) { got.push_back(w); });
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

TEST(Mailbox, AWakePostedFieldByFieldComesOutWithEveryField) {
  // Mailbox::post(tile, cycle, carries, link, payload, key), as Scheduler::post_flit and
  // post_credit use it: each field as given, across the ring's end, over a ring whose slots
  // held other wakes before (nothing of an earlier wake shows through).
  Mailbox m(3);  // a ring of 8
  for (uint32_t i = 0; i < 8; ++i) m.post({TileId(900 + i), ~uint64_t(0)});
  EXPECT_EQ(drain(m).size(), 8u);
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t k = 0; k < 5; ++k) {
      const uint32_t i = round * 5 + k;
      m.post(TileId(i), Cycle(1000 + i), i % 2 ? Wake::kFlit : Wake::kCredit, 70 + i, 0xabc00000u + i, uint16_t(0x4100 + i));
    }
    const std::vector<Wake> got = drain(m);
    ASSERT_EQ(got.size(), 5u);
    for (uint32_t k = 0; k < 5; ++k) {
      const uint32_t i = round * 5 + k;
      const Wake& w = got[k];
      EXPECT_EQ(w.tile, TileId(i));
      EXPECT_EQ(w.cycle, Cycle(1000 + i));
      EXPECT_EQ(w.carries, i % 2 ? Wake::kFlit : Wake::kCredit);
      EXPECT_EQ(w.link, 70 + i);
      EXPECT_EQ(w.payload, 0xabc00000u + i);
      EXPECT_EQ(w.key, uint16_t(0x4100 + i));
    }
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
      uint32_t counts[2] = {};  // this worker's posts to each, with its vote (as CycleEngine's)
      for (uint64_t c = 0; c < kCycles; ++c) {
        for (uint32_t k = 0; k < posts; ++k) out.post({TileId(k + 100 * w), c});
        v.next = c + 1, v.last = c;
        counts[1 - w] = out.posted();
        barrier.arrive(w, v, counts);
        in.take_until(barrier.mail(w, 1 - w), take);  // the other may be posting the next cycle's meanwhile
        if (taken < (c + 1) * posts) ++bad;
      }
      counts[1 - w] = out.posted();
      barrier.arrive(w, v, counts);
      in.take_until(barrier.mail(w, 1 - w), take);
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
