#pragma once
// How the mesh is cut into rectangular blocks, one per worker thread.
#include <cstdint>
#include <vector>

#include "fabric/geometry.hpp"

namespace wse {

struct Block {
  uint32_t x0, y0, x1, y1;  // [x0,x1) x [y0,y1)
};

struct Partition {
  std::vector<Block> blocks;
  std::vector<uint16_t> owner;  // tile -> block

  // Cuts the mesh into `workers` near-square blocks (fewer if the mesh is smaller).
  static Partition make(MeshShape shape, unsigned workers);
};

}  // namespace wse
