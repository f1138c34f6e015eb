#pragma once
// A static route for one colour at one router: where wavelets of that colour come from (one rx
// port) and where they go (a tx set; several = multicast, RAMP = deliver to this tile's PE).
#include <cstdint>

#include "fabric/geometry.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

struct Route {
  Dir rx = Dir::Ramp;
  uint8_t tx = 0;  // bit set of Dir

  static Route make(Dir rx, std::initializer_list<Dir> txs) {
    Route r{rx, 0};
    for (Dir d : txs) r.tx |= bit(d);
    return r;
  }
};

struct RouteSpec {
  Coord tile;
  Colour colour = 0;
  Route route;
};

}  // namespace wse
