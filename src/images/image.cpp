#include "images/image.h"

#include <algorithm>

namespace xlacel::images {

Image crop(const Image& image, int x, int y, int width, int height) {
  Image out{width, height, std::vector<uint8_t>(size_t(width) * height * 3), std::nullopt};
  for (int row = 0; row < height; ++row) {
    const uint8_t* from = image.pixel(x, y + row);
    std::copy(from, from + size_t(width) * 3, &out.rgb[size_t(row) * width * 3]);
  }
  return out;
}

Image composite_transparent_on_white(const Image& image) {
  if (!image.transparent_rgb) return image;
  Image out{image.width, image.height, image.rgb, std::nullopt};
  const auto& key = *image.transparent_rgb;
  for (size_t i = 0; i + 2 < out.rgb.size(); i += 3) {
    if (out.rgb[i] == key[0] && out.rgb[i + 1] == key[1] && out.rgb[i + 2] == key[2]) {
      out.rgb[i] = out.rgb[i + 1] = out.rgb[i + 2] = 255;
    }
  }
  return out;
}

}  // namespace xlacel::images
