#include "tools/viz/colour_scale.hpp"

#include <cmath>

namespace wse::viz {

Rgb viridis(double t) {
  if (!(t > 0)) t = 0;  // also catches NaN
  if (t > 1) t = 1;
  const double pos = t * double(kViridis.size() - 1);
  const size_t i = std::min(size_t(pos), kViridis.size() - 2);
  const double f = pos - double(i);
  const Rgb a = kViridis[i], b = kViridis[i + 1];
  auto mix = [f](uint8_t x, uint8_t y) { return uint8_t(std::lround(x + (double(y) - x) * f)); };
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

}  // namespace wse::viz
