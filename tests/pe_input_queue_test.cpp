// A PE's input queue held full: it holds what its router lane has credits for (the machine's
// pe_input_queue_depth + ramp_latency_cycles, Mesh::pe_queue_capacity), which the queue's ring
// (PeInputQueue::kSlots) must take at the deepest a machine may be. A ring two short of kSlots
// loses wavelets at the deepest here: the run below delivers a wrong sequence (checked by that
// mutation).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pe/pe.hpp"
#include "pe_test_support.hpp"

namespace wse {
namespace {

// A PE busy with a long task while a sender streams to it: its input queue fills to all its
// router lane's credits, then empties as the PE's data tasks take the wavelets, which must all
// arrive in order. Run on a WSE-2's queue (4 + 2 = 6 wavelets) and the deepest a machine may
// have (depth 16, RAMP latency 15: 31), stopped once while full to check that it is.
TEST(PeInputQueue, AQueueFilledToItsCreditsDeliversEveryWaveletInOrder) {
  for (const auto& [depth, ramp] : {std::pair<uint32_t, uint32_t>{4, 2}, {16, 15}}) {
    MachineSpec s = test::wse2();
    s.pe_input_queue_depth = depth, s.ramp_latency_cycles = ramp;
    Wafer wafer(s, {2, 1});
    Mesh& m = wafer.mesh();
    m.set_route({0, 0}, 3, Route::make(Dir::Ramp, {Dir::East}));
    m.set_route({1, 0}, 3, Route::make(Dir::West, {Dir::Ramp}));
    constexpr uint32_t n = 200;
    Program sender;
    sender.name = "sender";
    // (A run starts each PE's start task again: the second run below, which goes on from where
    // the first stopped, must neither send again nor wait again, so each start task runs once,
    // kept in a word of SRAM.)
    sender.start_task = sender.local(
        [](PeContext& ctx) {
          uint32_t* out = ctx.at<uint32_t>(0u);
          if (out[n]++) return;
          for (uint32_t k = 0; k < n; ++k) out[k] = k;
          ctx.fmovs(fabout(3, n), mem1d(0, n));
        },
        "send");
    wafer.load({0, 0}, &sender);
    wafer.allocate({0, 0}, "out", 4 * n + 4);
    // Busy first (elementwise work of 4000 elements: 2000 cycles of a WSE-2's two-wide moves),
    // then a data task per wavelet. (Offset 4 is free in the recorder's buffer.)
    Program slow;
    slow.name = "slow";
    slow.on(3, test::Recorder::on_wavelet, "record");
    slow.start_task = slow.local(
        [](PeContext& ctx) {
          if ((*ctx.at<uint32_t>(4u))++) return;
          ctx.elementwise(4000);
        },
        "busy");
    wafer.load({1, 0}, &slow);
    wafer.allocate({1, 0}, "record", 8 + 4 * n);
    wafer.finalize(1);
    const std::string at = "depth " + std::to_string(depth) + ", RAMP latency " + std::to_string(ramp);
    wafer.run(1000);  // stops at its cycle limit, the PE still busy
    ASSERT_EQ(wafer.pe({1, 0}).input_occupancy(), depth + ramp) << at;
    ASSERT_TRUE(test::Recorder::received(wafer, {1, 0}).empty()) << at;
    wafer.run(1000000);
    const std::vector<uint32_t> got = test::Recorder::received(wafer, {1, 0});
    ASSERT_EQ(got.size(), n) << at;
    for (uint32_t k = 0; k < n; ++k) ASSERT_EQ(got[k], k) << at << ", wavelet " << k;
  }
}

}  // namespace
}  // namespace wse
