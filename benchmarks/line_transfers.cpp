// Which code moves cache lines between the engine's workers: a library of the hooks that GCC's
// `-fsanitize=kernel-address` calls on every load and store when built with
// `--param asan-instrumentation-with-call-threshold=0` (one call per access, no shadow memory of
// its own), which scripts/line_transfers.sh links into an instrumented `wse`. It keeps, per
// 64-byte line, which worker wrote it last and which workers have read it since (a coherence
// protocol's state, with no capacity: a line stays in a core until another core writes it), and
// counts, per code site and worker, the accesses that would move a line between two cores: a
// read of a line another worker wrote last, and a write to a line another worker holds. The
// host has no hardware counters to ask (no `perf c2c`), and a run's timings cannot tell which
// of a cycle's lines cross; this counts them, the same on any host.
//
// A thread is "the host" (index 0) until the engine names it a worker (CycleEngine calls
// wse_line_transfers_worker at each worker's start and end, a weak symbol no other build
// defines); worker w is index w + 1. Counts per worker, not per thread: the engine makes a
// worker's thread anew for every run. At exit the counts go to $LINE_TRANSFERS_OUT (a text file:
// a header line per index, then a line per code site, module-relative addresses), which the
// script turns into functions and lines. Its accuracy: the table is a direct-mapped 2^25 lines
// (a line that shares a slot with another starts afresh), and a hook runs just before its access,
// not with it, so a spin on a flag can see the other worker's store before its count does: the
// spin's read of it goes uncounted (15% of a ping-pong's once, on a loaded host; the test's
// program ends each spin with one more load, in a function of its own, which is counted:
// tests/line_transfers_script_test.sh).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr unsigned kIndexes = 15;  // the host and 14 workers; later workers count as the 14th
constexpr unsigned kNone = 15;     // "no writer yet"
constexpr unsigned kTableBits = 25;
constexpr uint64_t kTableMask = (uint64_t(1) << kTableBits) - 1;

// A line's state: its tag (the line number's high bits) << 32 | last writer << 16 | readers since.
std::atomic<uint64_t>* table = nullptr;

struct Site {
  uint64_t reads = 0, writes = 0;
  // By where the line was: a read's last writer; a write's other holders (kNone: nobody wrote it).
  uint64_t from[kIndexes + 1] = {};
};
struct Index {
  std::unordered_map<uintptr_t, Site> sites;
  uint64_t accesses = 0;
};
Index* indexes[kIndexes] = {};
std::mutex made;
thread_local unsigned me = 0;

Index& mine() {
  if (!indexes[me]) {
    std::lock_guard<std::mutex> lock(made);
    if (!indexes[me]) indexes[me] = new Index;
  }
  return *indexes[me];
}

void touch(uint64_t line, bool write, uintptr_t pc) {
  if (!table) return;  // before the constructor, after the report
  Index& idx = mine();
  ++idx.accesses;
  const uint64_t bit = uint64_t(1) << me, tag = (line >> kTableBits) & 0xffffffffu;
  std::atomic<uint64_t>& slot = table[line & kTableMask];
  // A compare-and-swap per change of state, so that two workers touching one line at once (a
  // spin on a flag the other is about to write) each see the other's change: counted once each.
  uint64_t e = slot.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t next;
    bool moved = false;
    if (e == 0 || (e >> 32) != tag) {  // first seen (or its slot's other line was): no transfer
      next = tag << 32 | uint64_t(write ? me : kNone) << 16 | bit;
    } else {
      const unsigned writer = unsigned(e >> 16) & 15;
      const uint64_t readers = e & 0xffff;
      if (write) {
        if (writer == me && readers == bit) return;  // held by this index alone
        moved = (readers & ~bit) != 0 || (writer != kNone && writer != me);
        next = tag << 32 | uint64_t(me) << 16 | bit;
      } else {
        if (readers & bit) return;  // read since its last write
        moved = writer != kNone && writer != me;
        next = e | bit;
      }
    }
    if (!slot.compare_exchange_weak(e, next, std::memory_order_relaxed)) continue;  // (e reloaded)
    if (moved) {
      // Where it came from: for a read the line's last writer; for a write every other index
      // holding a copy (or, if none does, its last writer).
      Site& s = idx.sites[pc];
      const unsigned writer = unsigned(e >> 16) & 15;
      if (write) {
        ++s.writes;
        const uint64_t others = e & 0xffff & ~bit;
        for (unsigned k = 0; k < kIndexes; ++k)
          if (others >> k & 1) ++s.from[k];
        if (!others) ++s.from[writer];
      } else {
        ++s.reads, ++s.from[writer];
      }
    }
    return;
  }
}

inline void access(uintptr_t a, size_t n, bool write, uintptr_t pc) {
  const uint64_t first = a >> 6, last = (a + (n ? n - 1 : 0)) >> 6;
  touch(first, write, pc);
  if (last != first) touch(last, write, pc);
}

__attribute__((constructor)) void start() {
  table = static_cast<std::atomic<uint64_t>*>(calloc(kTableMask + 1, sizeof(uint64_t)));
}

__attribute__((destructor)) void report() {
  table = nullptr;
  // Written under a temporary name and renamed, so a reader never finds half a file.
  const std::string path = getenv("LINE_TRANSFERS_OUT") ? getenv("LINE_TRANSFERS_OUT") : "line_transfers.txt";
  const std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f) {
    fprintf(stderr, "line_transfers: cannot write %s\n", tmp.c_str());
    return;
  }
  for (unsigned i = 0; i < kIndexes; ++i) {
    if (!indexes[i]) continue;
    std::vector<std::pair<uintptr_t, Site>> sites(indexes[i]->sites.begin(), indexes[i]->sites.end());
    std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
      return a.second.reads + a.second.writes != b.second.reads + b.second.writes ? a.second.reads + a.second.writes > b.second.reads + b.second.writes
                                                                                  : a.first < b.first;
    });
    fprintf(f, "index %u accesses %llu\n", i, (unsigned long long)indexes[i]->accesses);
    for (const auto& [pc, s] : sites) {
      Dl_info info{};
      uintptr_t at = pc;
      const char* module = "?";
      if (dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_fname) at = pc - uintptr_t(info.dli_fbase), module = info.dli_fname;
      fprintf(f, "site %s 0x%llx reads %llu writes %llu from", module, (unsigned long long)at, (unsigned long long)s.reads,
              (unsigned long long)s.writes);
      for (unsigned k = 0; k <= kIndexes; ++k)
        if (s.from[k]) fprintf(f, " %s:%llu", k == kNone ? "none" : std::to_string(k).c_str(), (unsigned long long)s.from[k]);
      fprintf(f, "\n");
    }
  }
  if (fclose(f) != 0 || rename(tmp.c_str(), path.c_str()) != 0) fprintf(stderr, "line_transfers: cannot write %s\n", path.c_str());
}

}  // namespace

extern "C" {
// The engine's: which worker this thread is from now on (-1: the host again).
void wse_line_transfers_worker(int worker) { me = worker < 0 ? 0 : std::min<unsigned>(unsigned(worker) + 1, kIndexes - 1); }

#define WSE_LINE_HOOKS(n)                                                                                                 \
  void __asan_load##n##_noabort(uintptr_t a) { access(a, n, false, uintptr_t(__builtin_return_address(0))); } \
  void __asan_store##n##_noabort(uintptr_t a) { access(a, n, true, uintptr_t(__builtin_return_address(0))); }
WSE_LINE_HOOKS(1)
WSE_LINE_HOOKS(2)
WSE_LINE_HOOKS(4)
WSE_LINE_HOOKS(8)
WSE_LINE_HOOKS(16)
void __asan_loadN_noabort(uintptr_t a, size_t n) { access(a, n, false, uintptr_t(__builtin_return_address(0))); }
void __asan_storeN_noabort(uintptr_t a, size_t n) { access(a, n, true, uintptr_t(__builtin_return_address(0))); }
// What else the instrumented code calls, with nothing to do here.
void __asan_handle_no_return() {}
void __asan_before_dynamic_init(const void*) {}
void __asan_after_dynamic_init() {}
void __asan_register_globals(void*, size_t) {}
void __asan_unregister_globals(void*, size_t) {}
}
