// The machine presets pinned to the published figures they come from (docs/machine-spec.md): where
// a preset's figure is a vendor's or a paper's measurement of the machine, a run on the preset
// shows the machine's figure, computed here from the source's own numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "host/config.hpp"
#include "wafer/wafer.hpp"

namespace wse {
namespace {

// The published figure behind the edge's rate: a CS-2's 1.2 Tb/s of I/O (docs/machine-spec.md,
// io_bytes_per_cycle), at the WSE-2 preset's 850 MHz 176.47 bytes = 44.1 wavelets a cycle into the
// wafer. 128 ports on the north edge each stream 200 wavelets down their column: every cycle of the
// stream the wafer takes in 44.1 of them (1.2e12 / 8 / 850e6 / 4), whatever the ports' count.
TEST(MachinePreset, TheWse2PresetsEdgeTakesIn1Point2TerabitsASecond) {
  const MachineSpec s = load_machine("wse2");
  const uint32_t ports = 128, each = 200;
  Wafer wafer(s, {ports, 2});
  std::vector<EgressPort*> outs;
  for (uint32_t x = 0; x < ports; ++x) {
    for (uint32_t y = 0; y < 2; ++y) wafer.mesh().set_route({x, y}, 0, Route::make(Dir::North, {Dir::South}));
    IngressPort& in = wafer.mesh().add_ingress({x, 0}, Dir::North);
    for (uint32_t k = 0; k < each; ++k) in.enqueue(Wavelet{k, 0});
    outs.push_back(&wafer.mesh().add_egress({x, 1}, Dir::South));
  }
  wafer.finalize(1);
  wafer.run(1'000'000);
  Cycle first = kNever, last = 0;
  for (const EgressPort* out : outs) {
    ASSERT_EQ(out->received().size(), each);
    first = std::min(first, out->received().front().cycle), last = std::max(last, out->received().back().cycle);
  }
  const double per_cycle = double(ports) * each / double(last - first + 1);
  const double published = 1.2e12 / 8 / 850e6 / 4;  // wavelets of 4 bytes a cycle
  EXPECT_NEAR(per_cycle, published, 0.01 * published) << "cycles " << first << " .. " << last;
}

}  // namespace
}  // namespace wse
