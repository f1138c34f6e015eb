#pragma once
// Mesh geometry: tile coordinates and the five router ports.
#include <cstdint>
#include <string>

namespace wse {

using TileId = uint32_t;
using Cycle = uint64_t;
inline constexpr Cycle kNever = ~Cycle{0};

// Router ports. RAMP is the port between a router and its own PE.
enum class Dir : uint8_t { North = 0, East = 1, South = 2, West = 3, Ramp = 4 };
inline constexpr int kDirs = 5;
inline constexpr int kMeshDirs = 4;

inline constexpr uint8_t bit(Dir d) { return uint8_t(1u << uint8_t(d)); }

inline constexpr Dir opposite(Dir d) {
  switch (d) {
    case Dir::North: return Dir::South;
    case Dir::South: return Dir::North;
    case Dir::East: return Dir::West;
    case Dir::West: return Dir::East;
    default: return Dir::Ramp;
  }
}

inline const char* dir_name(Dir d) {
  static const char* names[] = {"N", "E", "S", "W", "RAMP"};
  return names[uint8_t(d)];
}

// y grows southwards (row 0 is the north edge), x grows eastwards.
struct Coord {
  uint32_t x = 0, y = 0;
  friend bool operator==(Coord, Coord) = default;
};

inline std::string to_string(Coord c) {
  return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")";
}

struct MeshShape {
  uint32_t width = 1, height = 1;
  uint64_t tiles() const { return uint64_t(width) * height; }
  TileId id(Coord c) const { return c.y * width + c.x; }
  Coord coord(TileId t) const { return {t % width, t / width}; }
  bool contains(int64_t x, int64_t y) const {
    return x >= 0 && y >= 0 && x < int64_t(width) && y < int64_t(height);
  }
  // Neighbour one hop away in direction d; false when that step leaves the mesh.
  bool neighbour(Coord c, Dir d, Coord& out) const {
    int64_t x = c.x, y = c.y;
    switch (d) {
      case Dir::North: --y; break;
      case Dir::South: ++y; break;
      case Dir::East: ++x; break;
      case Dir::West: --x; break;
      default: return false;
    }
    if (!contains(x, y)) return false;
    out = {uint32_t(x), uint32_t(y)};
    return true;
  }
};

}  // namespace wse
