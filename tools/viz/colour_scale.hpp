#pragma once
// The colour scale of every heatmap: viridis (perceptually uniform, readable in grey and by
// colour-blind viewers), as the 11 reference colours at t = 0, 0.1, ..., 1 with linear
// interpolation between them. The HTML viewer embeds the same table, so a value has the same
// colour in the PNGs and in the page.
#include <array>
#include <cstdint>

#include "tools/viz/image.hpp"

namespace wse::viz {

inline constexpr std::array<Rgb, 11> kViridis = {{
    {68, 1, 84}, {72, 36, 117}, {65, 68, 135}, {53, 95, 141}, {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
}};

// t in [0, 1] (clamped) to a colour.
Rgb viridis(double t);

// Maps a counter value to a colour: lo maps to viridis(0), hi to viridis(1).
struct ColourScale {
  double lo = 0, hi = 1;
  double fraction(double v) const { return hi > lo ? (v - lo) / (hi - lo) : 0.0; }
  Rgb colour(double v) const { return viridis(fraction(v)); }
};

}  // namespace wse::viz
