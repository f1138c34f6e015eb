#pragma once
// A small built-in bitmap font (5 x 7 pixels per glyph, 1 pixel of spacing) for axis labels,
// titles and legends in the PNG heatmaps: digits, letters (lower case is drawn as upper case)
// and the symbols labels need. Unknown characters are drawn as a hollow box.
#include <string_view>

#include "tools/viz/image.hpp"

namespace wse::viz {

inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kGlyphAdvance = 6;

// Width and height in pixels of `text` drawn at `scale` (each font pixel is scale x scale).
int text_width(std::string_view text, int scale = 1);
inline int text_height(int scale = 1) { return kGlyphHeight * scale; }
// Draws `text` with its top-left corner at (x, y).
void draw_text(Image& img, int x, int y, std::string_view text, Rgb colour, int scale = 1);
// Whether the font has a real glyph for c (after upper-casing).
bool has_glyph(char c);

}  // namespace wse::viz
