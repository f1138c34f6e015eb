#include "io/memory_limit.hpp"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/errors.hpp"

namespace wse {

namespace {

std::mutex g_mutex;
MemoryLimit g_set;  // bytes == 0: not set

// The first number in a file ("max" and unreadable files give 0).
uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return 0;
  return v;
}

// The cgroup (v2 or v1 memory controller) this process is in: its limit minus its usage, or 0.
uint64_t cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  uint64_t best = 0;
  for (std::string line; std::getline(in, line);) {
    // "0::/path" (v2) or "4:memory:/path" (v1).
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    uint64_t limit = 0, usage = 0;
    if (controllers.empty()) {
      limit = read_number("/sys/fs/cgroup" + path + "/memory.max");
      usage = read_number("/sys/fs/cgroup" + path + "/memory.current");
    } else if (controllers == "memory" || controllers.find("memory,") == 0 || controllers.find(",memory") != std::string::npos) {
      for (const std::string& root : {"/sys/fs/cgroup/memory" + path, std::string("/sys/fs/cgroup/memory")}) {
        limit = read_number(root + "/memory.limit_in_bytes");
        usage = read_number(root + "/memory.usage_in_bytes");
        if (limit) break;
      }
    }
    if (limit == 0 || limit >= (uint64_t(1) << 60)) continue;  // no limit ("max", or v1's huge default)
    const uint64_t room = limit > usage ? limit - usage : 0;
    if (!best || room < best) best = room;
  }
  return best;
}

// `ulimit -v` (RLIMIT_AS) less the address space this process maps now (VmSize), or 0 when
// unlimited: such a limit made a run the estimate let through fail later for lack of memory
// (exit 1), where it should have been refused up front (exit 2).
uint64_t address_space_room() {
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
  uint64_t mapped = 0;
  std::ifstream in("/proc/self/status");
  for (std::string key; in >> key;) {
    if (key == "VmSize:") {
      uint64_t kib = 0;
      in >> kib;
      mapped = kib * 1024;
      break;
    }
    in.ignore(1 << 10, '\n');
  }
  const uint64_t limit = uint64_t(r.rlim_cur);
  return limit > mapped ? limit - mapped : 1;
}

}  // namespace

constexpr const char* kAddressSpaceSource = "the address-space limit (ulimit -v) less what this process maps";

MemoryLimit detect_available_memory() {
  MemoryLimit m{0, "MemAvailable in /proc/meminfo"};
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    uint64_t kib = 0;
    in >> kib;
    if (key == "MemAvailable:") m.bytes = kib * 1024;
    in.ignore(1 << 10, '\n');
  }
  if (const uint64_t room = cgroup_room(); room && (!m.bytes || room < m.bytes)) m = {room, "cgroup memory limit less its usage"};
  if (const uint64_t room = address_space_room(); room && (!m.bytes || room < m.bytes)) m = {room, kAddressSpaceSource};
  if (!m.bytes) m = {UINT64_MAX, "no figure from the OS"};
  return m;
}

void set_memory_limit(uint64_t bytes, const std::string& source) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_set = {bytes, source};
}

MemoryLimit memory_limit() {
  MemoryLimit set;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    set = g_set;
  }
  if (!set.bytes) return detect_available_memory();
  // --max-memory tells the run what memory is there; it cannot lift `ulimit -v`, under which the
  // kernel refuses the mapping whatever the run was told (viz given --max-memory 2G under a
  // 300 MB limit skipped its check and died "out of host memory", exit 1: a CLI audit).
  if (const uint64_t room = address_space_room(); room && room < set.bytes) return {room, kAddressSpaceSource};
  return set;
}

uint64_t parse_memory_size(const std::string& text, const std::string& flag) {
  const auto bad = [&] {
    return UsageError(flag + " '" + text + "': expected a size such as 512M, 8G or 1.5GiB (K, M, G, T = powers of 1024), or bytes");
  };
  // Spaces around the figure are the shell's business, not the size's ("2G " was refused and " 2G" taken).
  const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  if (first == std::string::npos) throw bad();  // empty: `--max-memory ""` was ignored without a word
  std::istringstream in(text.substr(first, last - first + 1));
  double v = 0;
  if (!(in >> v) || !std::isfinite(v) || v < 0) throw bad();
  // A size, but none a run can have: said as such, not as a malformed size (a CLI audit).
  if (v == 0) throw UsageError(flag + " '" + text + "': no memory at all; expected a size above 0, such as 512M or 8G");
  std::string unit;
  in >> unit;
  if (!in.eof() && in.peek() != EOF) throw bad();
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  // KB, KiB, MB, ... are the unit's letter and a byte; "BB" or "BIB" are not sizes.
  if (unit.size() > 1 && unit[0] != 'B' && (unit.substr(1) == "B" || unit.substr(1) == "IB")) unit = unit.substr(0, 1);
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else throw bad();
  const double bytes = v * scale;
  if (bytes < 1) throw UsageError(flag + " '" + text + "': less than a byte; expected a size of at least 1 byte, such as 512M or 8G");
  if (bytes >= 1.8e19) throw UsageError(flag + " '" + text + "': more than 16 EiB, the most a size can be");
  return uint64_t(bytes);
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 16 EiB";
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return uint64_t(u.ru_maxrss) * 1024;  // Linux reports KiB
}

void check_memory(uint64_t need, const std::string& what, const std::string& advice) {
  const MemoryLimit limit = memory_limit();
  if (need <= limit.bytes) return;
  // Under `ulimit -v` the advice to raise the limit with --max-memory cannot help (the next
  // refusal, of the address space, said to raise ulimit -v): say that instead.
  std::string a = advice;
  const std::string flag_advice = "raise the limit with --max-memory";
  if (limit.source == kAddressSpaceSource) {
    if (const size_t i = a.find(flag_advice); i != std::string::npos) a.replace(i, flag_advice.size(), "raise ulimit -v (--max-memory cannot lift it)");
    else a += "; raise ulimit -v (--max-memory cannot lift it)";
  }
  throw UsageError(what + " needs about " + format_bytes(need) + " of host memory, but only " + format_bytes(limit.bytes) +
                   " is available (" + limit.source + ")" + a);
}

void check_address_space(uint64_t need, const std::string& what, const std::string& advice) {
  const uint64_t room = address_space_room();
  if (!room || need <= room) return;
  throw UsageError(what + " needs about " + format_bytes(need) + " of address space, but only " + format_bytes(room) +
                   " is left under the address-space limit (ulimit -v)" + advice);
}

}  // namespace wse
