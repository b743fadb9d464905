#include <cstring>

#include "common/error.h"
#include "images/decode.h"
#include "images/decoders.h"

namespace xlacel::images {
namespace {

bool starts_with(std::span<const uint8_t> bytes, size_t offset, const char* magic) {
  size_t n = std::strlen(magic);
  return bytes.size() >= offset + n && std::memcmp(bytes.data() + offset, magic, n) == 0;
}

}  // namespace

void check_image_size(int64_t width, int64_t height, std::string_view name) {
  if (width < 1 || height < 1) fail(name, "image has no pixels ({}x{})", width, height);
  if (width > kMaxImageSide || height > kMaxImageSide || width * height > kMaxImagePixels) {
    fail(name, "image of {}x{} is too large (at most {} pixels a side and {} in all)", width,
         height, kMaxImageSide, kMaxImagePixels);
  }
}

Image decode_image(std::span<const uint8_t> bytes, std::string_view name) {
  DecodedImage decoded;
  if (bytes.empty()) fail(name, "empty file, not an image");
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) {
    decoded = decode_png(bytes, name);
  } else if (starts_with(bytes, 0, "\xff\xd8\xff")) {
    decoded = decode_jpeg(bytes, name);
  } else if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) {
    decoded = decode_webp(bytes, name);
  } else if (starts_with(bytes, 0, "GIF87a") || starts_with(bytes, 0, "GIF89a")) {
    decoded = decode_gif(bytes, name);
  } else {
    fail(name, "not a PNG, JPEG, WebP or GIF image");
  }
  int orientation = decoded.exif.empty() ? 1 : exif_orientation(decoded.exif);
  if (orientation == 1) return std::move(decoded.image);
  return apply_exif_orientation(decoded.image, orientation);
}

}  // namespace xlacel::images
