#pragma once
// An 8-bit RGB raster and its PNG encoding (libpng). Pictures of the mesh are drawn into one of
// these and written once; nothing here knows about dumps or metrics.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wse::viz {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

class Image {
 public:
  Image(uint32_t width, uint32_t height, Rgb fill = {255, 255, 255});

  uint32_t width() const { return width_; }
  uint32_t height() const { return height_; }
  Rgb at(uint32_t x, uint32_t y) const;
  // Out-of-range pixels are ignored, so text and ticks may run off an edge safely.
  void set(int64_t x, int64_t y, Rgb c);
  void fill_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c);
  void frame_rect(int64_t x, int64_t y, int64_t w, int64_t h, Rgb c);  // 1-pixel outline
  const std::vector<uint8_t>& pixels() const { return px_; }  // row-major RGB

  // Throws std::runtime_error naming the path if the file cannot be written.
  // Atomically (io/output_file.hpp); `sync` = survive a power cut too (frames skip it).
  void write_png(const std::filesystem::path& path, bool sync = true) const;

 private:
  uint32_t width_, height_;
  std::vector<uint8_t> px_;
};

}  // namespace wse::viz
