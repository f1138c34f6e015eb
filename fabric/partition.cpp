#include "fabric/partition.hpp"

#include <algorithm>
#include <cmath>

namespace wse {

Partition Partition::make(MeshShape shape, unsigned workers) {
  workers = unsigned(std::clamp<uint64_t>(workers, 1, std::min<uint64_t>(shape.tiles(), 4096)));
  // Pick bx * by = workers minimising the cut length (bx-1)*height + (by-1)*width.
  unsigned best_bx = 1, best_by = workers;
  uint64_t best_cut = ~uint64_t(0);
  for (unsigned bx = 1; bx <= workers; ++bx) {
    if (workers % bx) continue;
    unsigned by = workers / bx;
    if (bx > shape.width || by > shape.height) continue;
    uint64_t cut = uint64_t(bx - 1) * shape.height + uint64_t(by - 1) * shape.width;
    if (cut < best_cut) best_cut = cut, best_bx = bx, best_by = by;
  }
  if (best_cut == ~uint64_t(0)) {  // e.g. a prime count on a thin mesh: stripes along the long side
    if (shape.height >= shape.width) best_bx = 1, best_by = std::min<unsigned>(workers, shape.height);
    else best_bx = std::min<unsigned>(workers, shape.width), best_by = 1;
  }
  Partition p;
  p.owner.resize(shape.tiles());
  for (unsigned by = 0; by < best_by; ++by) {
    for (unsigned bx = 0; bx < best_bx; ++bx) {
      Block b{uint32_t(uint64_t(shape.width) * bx / best_bx), uint32_t(uint64_t(shape.height) * by / best_by),
              uint32_t(uint64_t(shape.width) * (bx + 1) / best_bx),
              uint32_t(uint64_t(shape.height) * (by + 1) / best_by)};
      auto id = uint16_t(p.blocks.size());
      p.blocks.push_back(b);
      for (uint32_t y = b.y0; y < b.y1; ++y)
        for (uint32_t x = b.x0; x < b.x1; ++x) p.owner[shape.id({x, y})] = id;
    }
  }
  return p;
}

}  // namespace wse
