#pragma once
// A cheap reading of the host's clock, for measuring how a run was spent on the host (never for
// anything a result depends on). On x86 the time-stamp counter (one instruction, no system call;
// constant-rate on the x86 CPUs of the last decade): only ratios of differences between two
// readings are used, so its unit never matters. Elsewhere, steady_clock's nanoseconds.
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
