#pragma once
// Where a mesh's lanes live: blocks of line-aligned lane slots, handed out side by side, with a
// free list per length for the arrays a router lets go while its routes are set. Routers take
// their lanes through LanePool::Allocator (Router::lanes); Mesh::set_route grows a router's
// array by one lane at a time, so the array it lets go is one lane shorter than the one it takes
// and the next router's growth reuses it: the arrays that stay are the routers' exact lanes, in
// the order the routers were routed (mostly tile order), one after another.
//
// A line-aligned heap block per lane array cost about 900 bytes for a router's three lanes (576)
// on a full wafer, growth by doubling included, and scattered each router's lanes among the rest
// of the set-up (docs/performance-history.md, nineteenth round).
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "fabric/lane.hpp"

namespace wse {

class LanePool {
 public:
  LanePool() = default;
  LanePool(const LanePool&) = delete;  // allocators point at the pool
  LanePool& operator=(const LanePool&) = delete;

  Lane* take(size_t n) {
    if (n < free_.size() && !free_[n].empty()) {
      Lane* p = free_[n].back();
      free_[n].pop_back();
      return p;
    }
    if (blocks_.empty() || used_ + n > kBlockLanes) {
      blocks_.push_back(std::make_unique_for_overwrite<Slot[]>(kBlockLanes));
      used_ = 0;
    }
    Lane* p = reinterpret_cast<Lane*>(&blocks_.back()[used_]);
    used_ += n;
    return p;
  }
  void give_back(Lane* p, size_t n) {
    if (n >= free_.size()) free_.resize(n + 1);
    free_[n].push_back(p);
  }

  // A std::allocator for a router's lanes: from `pool`, or from the heap when it has none (a
  // router made outside a mesh).
  template <class T>
  struct Allocator {
    using value_type = T;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    LanePool* pool = nullptr;

    Allocator() = default;
    explicit Allocator(LanePool* p) : pool(p) {}
    template <class U>
    Allocator(const Allocator<U>& o) : pool(o.pool) {}
    T* allocate(size_t n) {
      static_assert(std::is_same_v<T, Lane>, "the pool holds lanes");
      if (pool) return pool->take(n);
      return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
    }
    void deallocate(T* p, size_t n) {
      if (pool) return pool->give_back(p, n);
      ::operator delete(p, std::align_val_t{alignof(T)});
    }
    friend bool operator==(const Allocator& a, const Allocator& b) { return a.pool == b.pool; }
  };

 private:
  struct alignas(alignof(Lane)) Slot {
    std::byte bytes[sizeof(Lane)];
  };
  static constexpr size_t kBlockLanes = 4096;  // 768 KiB a block
  // A router has a lane per colour at most, so any array fits a block.
  static_assert(kBlockLanes >= MachineSpec::kMaxColours);
  std::vector<std::unique_ptr<Slot[]>> blocks_;
  size_t used_ = 0;                       // slots of the last block handed out
  std::vector<std::vector<Lane*>> free_;  // by length: arrays given back
};

using LaneVector = std::vector<Lane, LanePool::Allocator<Lane>>;

}  // namespace wse
