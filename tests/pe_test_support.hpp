#pragma once
// Small PE programs for the PE and switch tests: a recorder that keeps every wavelet it gets, and
// a wafer row with one program per PE.
#include <gtest/gtest.h>

#include <vector>

#include "host/config.hpp"
#include "wafer/wafer.hpp"

namespace wse::test {

// Records every data wavelet on any colour: SRAM offset 0 = count, then payloads from offset 8.
struct Recorder {
  static void on_wavelet(PeContext& ctx, Wavelet w) {
    auto* count = ctx.at<uint32_t>(0u);
    ctx.at<uint32_t>(8u)[*count] = w.payload;
    ++*count;
  }
  Program program;
  Recorder() {
    program.name = "recorder";
    for (Colour c = 0; c < 24; ++c) program.on(c, on_wavelet, "record");
  }
  void install(Wafer& w, Coord c, uint32_t max_wavelets) const {
    w.load(c, &program);
    SramRef r = w.allocate(c, "record", 8 + 4 * max_wavelets);
    EXPECT_EQ(r.offset, 0u);
  }
  static std::vector<uint32_t> received(const Wafer& w, Coord c) {
    const uint8_t* base = w.pe(c).sram.base();
    const uint32_t n = *reinterpret_cast<const uint32_t*>(base);
    auto* p = reinterpret_cast<const uint32_t*>(base + 8);
    return {p, p + n};
  }
};

inline MachineSpec wse2() { return load_machine("wse2"); }
inline MachineSpec wse3() { return load_machine("wse3"); }

}  // namespace wse::test
