#pragma once
// An 8-bit RGB image, row-major, 3 bytes per pixel: what every decoder produces and what Pillow's
// resampling works on, so that each stage can be compared with Pillow's bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace xlacel::images {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3
  // The one colour a GIF or PNG declares transparent (transparency index or tRNS), which Pillow
  // keeps in info["transparency"] through convert("RGB"); transformers' convert_to_rgb then
  // composites those pixels onto white (composite_transparent_on_white).
  std::optional<std::array<uint8_t, 3>> transparent_rgb;

  const uint8_t* pixel(int x, int y) const { return &rgb[(size_t(y) * width + x) * 3]; }
};

// The rectangle [x, x + width) x [y, y + height), which must lie inside the image (callers
// derive it from the image's own size).
Image crop(const Image& image, int x, int y, int width, int height);

// transformers' convert_to_rgb on what load_image returns: pixels of the transparent colour
// become white, the rest stay (alpha 0 or 255 composited exactly).
Image composite_transparent_on_white(const Image& image);

}  // namespace xlacel::images
