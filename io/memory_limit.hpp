#pragma once
// How much host memory a run may use, and the check made before any big allocation: what the
// operating system says is available (MemAvailable, or the cgroup's limit when that is lower),
// unless `--max-memory` names a figure. A job that cannot fit is refused up front with the bytes
// it would need, instead of dying in std::bad_alloc after allocating gigabytes.
#include <cstdint>
#include <string>

namespace wse {

struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;  // "MemAvailable", "cgroup memory limit", "--max-memory", ...
};

// What the OS says now (MemAvailable; a lower cgroup limit minus its usage).
MemoryLimit detect_available_memory();
// --max-memory: replaces the detected figure for this process (0 = detect again).
void set_memory_limit(uint64_t bytes, const std::string& source = "--max-memory");
// The figure in force: the one set (but never more than `ulimit -v` leaves: the kernel holds to
// that whatever the run was told), else the one detected.
MemoryLimit memory_limit();

// "512M", "8G", "1.5GiB", "4096" (bytes); K, M, G, T are powers of 1024. Throws UsageError
// naming `flag`.
uint64_t parse_memory_size(const std::string& text, const std::string& flag = "--max-memory");
// "4.7 GiB", "512 MiB", "96 bytes".
std::string format_bytes(uint64_t bytes);

// Throws UsageError "<what> needs about N, but only M is available (<source>)<advice>" when
// `need` is over the limit in force.
void check_memory(uint64_t need, const std::string& what, const std::string& advice = "");
// The same against `ulimit -v` (RLIMIT_AS) alone, for a need counted in address space (a mapping
// reserved whole, committed a page at a time): nothing when there is no such limit. --max-memory
// does not lift it: the kernel refuses the mapping whatever the run was told.
void check_address_space(uint64_t need, const std::string& what, const std::string& advice = "");

// The most host memory this process has held so far (getrusage's ru_maxrss): what a report gives
// as `peak_rss_bytes`, the figure the estimate above is measured against (docs/reliability.md).
uint64_t peak_rss_bytes();

// a * b, saturating at UINT64_MAX: sizes computed from untrusted dimensions never wrap.
inline uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace wse
