// A run that deadlocks stops with a diagnosis instead of ending quietly or spinning: which PEs
// wait on what, which lanes hold wavelets and toward where, which ports are blocked (issue 11).
// The engine steps only what is due, so a program that can never move leaves nothing due: the
// run stops at once, and run.max_cycles bounds everything else.
#include <gtest/gtest.h>

#include "pe_test_support.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

constexpr uint32_t kN = 8;

// Each PE adds what it receives to its values and sends the sum on: but each waits for the
// other's first element before it sends its own, a cycle of waits.
void wait_for_east(PeContext& ctx) {
  ctx.fadds(fabout(1, kN), ctx.mem(ctx.at<float>(0u), kN), fabin(2, kN));
}
void wait_for_west(PeContext& ctx) {
  ctx.fadds(fabout(2, kN), ctx.mem(ctx.at<float>(0u), kN), fabin(1, kN));
}

TEST(Hang, TwoPesWaitingOnEachOtherAreNamedWithTheirColours) {
  Wafer w(test::wse2(), {2, 1});
  Mesh& m = w.mesh();
  m.set_route({0, 0}, 1, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, 1, Route::make(Dir::West, {Dir::Ramp}));
  m.set_route({1, 0}, 2, Route::make(Dir::Ramp, {Dir::West}));
  m.set_route({0, 0}, 2, Route::make(Dir::East, {Dir::Ramp}));
  Program a, b;
  a.name = "west", b.name = "east";
  a.start_task = a.local(wait_for_east, "wait_for_east");
  b.start_task = b.local(wait_for_west, "wait_for_west");
  a.block(2), b.block(1);
  w.load({0, 0}, &a), w.load({1, 0}, &b);
  w.allocate({0, 0}, "v", kN * 4), w.allocate({1, 0}, "v", kN * 4);
  w.finalize(1);
  test::expect_error<HangError>([&] { w.run(1'000'000); },
                                {"with work left and nothing able to move (a deadlock)",
                                 "PE (0,0): main thread @fadds ('wait_for_east', 0 of 8 elements) waits for input on colour 2",
                                 "PE (1,0): main thread @fadds ('wait_for_west', 0 of 8 elements) waits for input on colour 1"});
  // It stopped right away, not at the cycle limit.
  EXPECT_LT(w.clock(), 1000u);
}

// A sender whose receiver never reads: the receiver's queue, the lanes and the sender's output
// queue fill up; every one of them is named.
void send_many(PeContext& ctx) { ctx.fmovs(fabout(3, 64), ctx.mem(ctx.at<float>(0u), 64)); }

TEST(Hang, WaveletsNobodyReadsAreTracedBackToTheSender) {
  Wafer w(test::wse2(), {3, 1});
  Mesh& m = w.mesh();
  m.set_route({0, 0}, 3, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, 3, Route::make(Dir::West, {Dir::East}));
  m.set_route({2, 0}, 3, Route::make(Dir::West, {Dir::Ramp}));
  Program sender, sink;
  sender.name = "sender", sink.name = "sink";
  sender.start_task = sender.local(send_many, "send_many");
  sink.block(3);  // and no op ever reads it
  w.load({0, 0}, &sender), w.load({2, 0}, &sink);
  w.allocate({0, 0}, "v", 64 * 4);
  w.finalize(2);
  test::expect_error<HangError>(
      [&] { w.run(1'000'000); },
      {"PE (2,0): 6 wavelet(s) of colour 3 in its input queue: its colour is blocked and no running op reads it",
       "router (2,0) colour 3 holds", "waits for a credit toward RAMP", "router (1,0) colour 3 holds", "toward E",
       "PE (0,0): main thread @fmovs ('send_many'", "waits for room to send on colour 3"});
}

// An ingress port whose stream nobody reads is blocked, and said to be: the lane it feeds is full.
// (Its line was first written to say "paced" for a port whose next wavelet was due after the
// run's start, which a blocked port's is: a review caught it, checking against the run's end.)
TEST(Hang, AnIngressPortNobodyReadsIsSaidToBeBlockedNotPaced) {
  Wafer w(test::wse2(), {2, 1});
  Mesh& m = w.mesh();
  m.set_route({0, 0}, 3, Route::make(Dir::West, {Dir::East}));
  m.set_route({1, 0}, 3, Route::make(Dir::West, {Dir::Ramp}));
  IngressPort& in = m.add_ingress({0, 0}, Dir::West);
  for (uint32_t k = 0; k < 64; ++k) in.enqueue(Wavelet{k, 3});
  Program sink;
  sink.name = "sink";
  sink.block(3);
  w.load({1, 0}, &sink);
  w.finalize(1);
  try {
    w.run(1'000'000);
    ADD_FAILURE() << "no deadlock";
  } catch (const HangError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ingress port at (0,0) side W: "), std::string::npos) << what;
    EXPECT_NE(what.find("wavelets not taken (colour 3's lane is full or switched away)"), std::string::npos) << what;
    EXPECT_EQ(what.find("paced"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace wse
