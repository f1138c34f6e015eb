#pragma once
// Small scenarios for fabric and PE tests.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "wafer/wafer.hpp"

namespace wse::test {

// WSE-2 figures with unlimited edge I/O, so ports run at link rate unless a test says otherwise.
inline MachineSpec spec(uint32_t hop_latency = 2) {
  MachineSpec s;
  s.io_bytes_per_cycle = 0;
  s.hop_latency_cycles = hop_latency;
  return s;
}

// Expects `fn` to throw E with a message containing every fragment.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    std::string what = e.what();
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
}

}  // namespace wse::test
