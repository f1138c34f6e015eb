#pragma once
// A PE's local SRAM: named allocations with bytes in use and a high-water mark. The bytes live
// in a wafer-wide arena reserved with mmap(MAP_NORESERVE): the host OS backs a page only when a
// PE first writes it, so an untouched wafer costs almost nothing (pages allocated on first write).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

// Names of SRAM allocations, interned once per wafer so a PE stores a 16-bit id.
class NameTable {
 public:
  uint16_t intern(std::string_view name);
  const std::string& name(uint16_t id) const { return names_[id]; }

 private:
  std::vector<std::string> names_;
};

// A byte range in one PE's SRAM.
struct SramRef {
  uint32_t offset = 0, bytes = 0;
};

struct SramAllocation {
  uint16_t name = 0;
  uint32_t offset = 0, bytes = 0;
};

class Sram {
 public:
  void bind(uint8_t* base, uint32_t capacity) { base_ = base, capacity_ = capacity; }

  // First fit, 8-byte aligned. Throws PeError naming the PE, the buffer and the sizes.
  SramRef allocate(Coord pe, const NameTable& names, uint16_t name, uint32_t bytes);
  // The bytes a buffer of `bytes` takes once placed: rounded up to 8 (what a kernel adds up to
  // say, before placing anything, whether its buffers fit).
  static uint64_t placed(uint64_t bytes) { return (bytes + 7) & ~uint64_t(7); }
  void free(uint16_t name);
  const SramAllocation* find(uint16_t name) const;

  uint8_t* base() const { return base_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t bytes_in_use() const { return in_use_; }
  uint32_t high_water() const { return high_water_; }
  void reset_high_water() { high_water_ = in_use_; }
  const std::vector<SramAllocation>& allocations() const { return allocs_; }

 private:
  uint8_t* base_ = nullptr;
  uint32_t capacity_ = 0, in_use_ = 0, high_water_ = 0;
  std::vector<SramAllocation> allocs_;  // sorted by offset
};

// The wafer's SRAM arena: capacity bytes for every tile, reserved but not committed.
//
// Tiles lie a cache line further apart than their capacity. At exactly 48 KiB apart, the same
// offset in every PE's SRAM (where a kernel keeps the same buffer on every PE) fell in one set
// of the host's first-level cache and in one of eight sets of its 1 MiB second level: a cycle's PEs,
// all working on the same buffers, evicted each other's lines. One line more staggers them over
// every set.
class SramArena {
 public:
  SramArena(uint64_t tiles, uint32_t capacity);
  ~SramArena();
  SramArena(const SramArena&) = delete;
  SramArena& operator=(const SramArena&) = delete;
  uint8_t* tile(TileId t) const { return base_ + uint64_t(t) * stride_; }
  // Bytes from one tile's SRAM to the next one's: the capacity rounded up to a cache line, and
  // one line more.
  static uint64_t stride(uint32_t capacity) { return ((uint64_t(capacity) + 63) & ~uint64_t(63)) + 64; }

 private:
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t stride_ = 0;
};

}  // namespace wse
