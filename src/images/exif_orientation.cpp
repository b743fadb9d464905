#include <cstring>
#include <utility>

#include "images/decoders.h"

namespace xlacel::images {

int exif_orientation(std::span<const uint8_t> exif) {
  if (exif.size() >= 6 && std::memcmp(exif.data(), "Exif\0\0", 6) == 0) exif = exif.subspan(6);
  if (exif.size() < 8) return 1;
  const bool little = exif[0] == 'I' && exif[1] == 'I';
  if (!little && !(exif[0] == 'M' && exif[1] == 'M')) return 1;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? exif[at] | (exif[at + 1] << 8) : (exif[at] << 8) | exif[at + 1];
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  const size_t ifd = u32(4);
  if (ifd > exif.size() - 2) return 1;
  const size_t entries = u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + i * 12;
    if (entry + 12 > exif.size()) return 1;
    if (u16(entry) == 0x0112 && u16(entry + 2) == 3) {  // Orientation, SHORT
      uint32_t value = u16(entry + 8);
      return value >= 1 && value <= 8 ? int(value) : 1;
    }
  }
  return 1;
}

Image apply_exif_orientation(const Image& image, int orientation) {
  // Where output pixel (x, y) comes from, per PIL.ImageOps.exif_transpose's transposes:
  // 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 270, 7 transverse, 8 rotate 90.
  const bool swap = orientation >= 5;
  const int w = swap ? image.height : image.width, h = swap ? image.width : image.height;
  Image out{w, h, std::vector<uint8_t>(image.rgb.size()), image.transparent_rgb};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;
        case 3:
          sx = w - 1 - x, sy = h - 1 - y;
          break;
        case 4:
          sy = h - 1 - y;
          break;
        case 5:
          sx = y, sy = x;
          break;
        case 6:
          sx = y, sy = w - 1 - x;
          break;
        case 7:
          sx = h - 1 - y, sy = w - 1 - x;
          break;
        case 8:
          sx = h - 1 - y, sy = x;
          break;
        default:
          break;
      }
      std::memcpy(&out.rgb[(size_t(y) * w + x) * 3], image.pixel(sx, sy), 3);
    }
  }
  return out;
}

}  // namespace xlacel::images
