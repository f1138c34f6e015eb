#include "pe/sram.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "core/errors.hpp"

namespace wse {

uint16_t NameTable::intern(std::string_view name) {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return uint16_t(i);
  if (names_.size() == 0xffff) throw UsageError("too many distinct SRAM buffer names");
  names_.emplace_back(name);
  return uint16_t(names_.size() - 1);
}

SramRef Sram::allocate(Coord pe, const NameTable& names, uint16_t name, uint32_t bytes) {
  if (find(name))
    throw PeError("PE " + to_string(pe) + ": SRAM buffer '" + names.name(name) + "' is already allocated");
  const auto size = uint32_t(placed(bytes));
  uint32_t at = 0;
  size_t pos = 0;
  for (; pos < allocs_.size(); ++pos) {
    if (allocs_[pos].offset - at >= size) break;
    at = (allocs_[pos].offset + allocs_[pos].bytes + 7) & ~7u;
  }
  if (uint64_t(at) + size > capacity_) {
    std::string why = " bytes but only " + std::to_string(capacity_ - in_use_) + " of " + std::to_string(capacity_) +
                      " are free (" + std::to_string(in_use_) + " in use)";
    if (capacity_ - in_use_ >= size) why += ", in pieces too small for it";
    throw PeError("PE " + to_string(pe) + ": SRAM buffer '" + names.name(name) + "' needs " + std::to_string(bytes) + why);
  }
  allocs_.insert(allocs_.begin() + long(pos), {name, at, size});
  in_use_ += size;  // the aligned size: what placement actually takes
  high_water_ = std::max(high_water_, in_use_);
  return {at, bytes};
}

void Sram::free(uint16_t name) {
  auto it = std::find_if(allocs_.begin(), allocs_.end(), [&](const SramAllocation& a) { return a.name == name; });
  if (it == allocs_.end()) return;
  in_use_ -= it->bytes;
  allocs_.erase(it);
}

const SramAllocation* Sram::find(uint16_t name) const {
  for (const auto& a : allocs_)
    if (a.name == name) return &a;
  return nullptr;
}

SramArena::SramArena(uint64_t tiles, uint32_t capacity) : bytes_(capacity ? tiles * stride(capacity) : 0), stride_(stride(capacity)) {
  if (!bytes_) return;
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<uint8_t*>(p);
}

SramArena::~SramArena() {
  if (base_) munmap(base_, bytes_);
}

}  // namespace wse
