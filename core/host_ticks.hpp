#pragma once
// A cheap reading of the host's clock, for measuring how a run was spent on the host (never for
// anything a result depends on). On x86 the time-stamp counter (constant-rate on every CPU this
// runs on, about 20 cycles to read where steady_clock costs about 60): only ratios of two readings'
// differences are used, so its unit never matters. Elsewhere, steady_clock's nanoseconds.
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace wse {

inline uint64_t host_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
#endif
}

}  // namespace wse
