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
      EXPECT_EQ(got[size_t(k)].cycle(), want);
      EXPECT_EQ(got[size_t(k)].to, TileId(want % 1000));
      EXPECT_EQ(got[size_t(k)].carries(), Wake::kNothing);
    }
    EXPECT_TRUE(drain(m).empty());
  }
}

TEST(Mailbox, AWakePostedFieldByFieldComesOutWithEveryField) {
  // Mailbox::post(to, cycle, carries, payload, key), as Scheduler::post_flit and post_credit use
  // it: each field as given, across the ring's end, over a ring whose slots held other wakes
  // before (nothing of an earlier wake shows through), with the packed word's fields at their
  // widest (a cycle of 48 bits, a key of 14, both kinds of cargo) beside small ones.
  Mailbox m(3);  // a ring of 8
  for (uint32_t i = 0; i < 8; ++i) m.post({TileId(900 + i), Wake::kCycleMask, Wake::kCredit, ~0u, uint16_t(0x3fff)});
  EXPECT_EQ(drain(m).size(), 8u);
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t k = 0; k < 5; ++k) {
      const uint32_t i = round * 5 + k;
      const Cycle c = i % 3 ? Cycle(1000 + i) : Wake::kCycleMask - i;
      m.post(70 + i, c, i % 2 ? Wake::kFlit : Wake::kCredit, 0xabc00000u + i, uint16_t(i % 3 ? 0x100 + i : 0x3fff - i));
    }
    const std::vector<Wake> got = drain(m);
    ASSERT_EQ(got.size(), 5u);
    for (uint32_t k = 0; k < 5; ++k) {
      const uint32_t i = round * 5 + k;
      const Wake& w = got[k];
      EXPECT_EQ(w.to, 70 + i);
      EXPECT_EQ(w.cycle(), i % 3 ? Cycle(1000 + i) : Wake::kCycleMask - i);
      EXPECT_EQ(w.carries(), i % 2 ? Wake::kFlit : Wake::kCredit);
      EXPECT_EQ(w.payload, 0xabc00000u + i);
      EXPECT_EQ(w.key(), uint16_t(i % 3 ? 0x100 + i : 0x3fff - i));
    }
  }
}

// Through two schedulers, as the engine's workers use them: a plain wake names its tile, a flit's
// and a credit's name their hop, and the owner wakes the tile that delivering it returns (a
// hop's dst or src: Mesh::deliver), at the cycle posted, now or later; a cycle beyond the 48 bits
// a wake holds is refused where it is posted, not wrapped to an earlier one.
TEST(Mailbox, TheOwnerWakesTheTileAWakeNamesOrItsCargoIsFor) {
  const std::vector<uint16_t> owner = {0, 0, 1, 1};  // tiles 0-1 worker 0's, 2-3 worker 1's
  Mailbox to0(8), to1(8);
  Scheduler s0(4), s1(4);
  s0.connect(owner.data(), 0, {nullptr, &to1}, {nullptr, &to0});
  s1.connect(owner.data(), 1, {&to0, nullptr}, {&to1, nullptr});
  s0.start_at(5), s1.start_at(5);
  s0.begin_cycle(5);
  s0.schedule(2, 6);                                 // a plain wake: tile 2 next cycle
  s0.post_flit(3, 41, 6, 0xfeedu, Flit::key_of(7, 1));  // hop 41's shadow, toward tile 3
  s0.post_credit(2, 17, 9, 5);                       // a credit back over hop 17, visible at 9
  EXPECT_THROW(s0.schedule(3, Wake::kCycleMask + 1), std::logic_error);
  s0.schedule(3, Wake::kCycleMask);                  // the last cycle a wake holds
  std::vector<Wake> delivered;
  s1.begin_cycle(6);
  s1.take_mail([&](const Wake& w) { delivered.push_back(w); return TileId(w.carries() == Wake::kFlit ? 3 : 2); },
               [&](unsigned from) { return from == 0 ? to1.posted() : 0u; });
  ASSERT_EQ(delivered.size(), 2u);
  EXPECT_EQ(delivered[0].to, 41u);
  EXPECT_EQ(delivered[0].carries(), Wake::kFlit);
  EXPECT_EQ(delivered[0].payload, 0xfeedu);
  EXPECT_EQ(delivered[0].key(), Flit::key_of(7, 1));
  EXPECT_EQ(delivered[0].cycle(), 6u);
  EXPECT_EQ(delivered[1].to, 17u);
  EXPECT_EQ(delivered[1].carries(), Wake::kCredit);
  EXPECT_EQ(delivered[1].key(), 5u);
  EXPECT_EQ(delivered[1].cycle(), 9u);
  std::vector<TileId> now;
  s1.step_due([&](TileId t) { now.push_back(t); });
  EXPECT_EQ(now, (std::vector<TileId>{2, 3}));  // the plain wake's tile and the flit's, at 6
  EXPECT_EQ(s1.next_event(), 9u);               // the credit's tile, when it becomes visible
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
        if (m.to != TileId(taken % posts + 100 * (1 - w)) || m.cycle() != taken / posts) ++bad;
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
