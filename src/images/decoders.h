#pragma once
// The per-format decoders behind decode_image (decode.h); each returns the RGB pixels as
// Pillow's convert("RGB") gives them from the mode Pillow opens the file in, and the raw EXIF
// block if the file has one. Errors name `name`.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "images/image.h"

namespace xlacel::images {

struct DecodedImage {
  Image image;
  std::vector<uint8_t> exif;  // TIFF bytes, possibly after "Exif\0\0"; empty if none
};

DecodedImage decode_png(std::span<const uint8_t> bytes, std::string_view name);
DecodedImage decode_jpeg(std::span<const uint8_t> bytes, std::string_view name);
DecodedImage decode_webp(std::span<const uint8_t> bytes, std::string_view name);
DecodedImage decode_gif(std::span<const uint8_t> bytes, std::string_view name);

// Throws unless 1 <= width, height <= kMaxImageSide and width * height <= kMaxImagePixels;
// called from each header before pixels are allocated.
void check_image_size(int64_t width, int64_t height, std::string_view name);

// The EXIF Orientation tag (1..8), 1 when absent or unreadable.
int exif_orientation(std::span<const uint8_t> exif);
// PIL.ImageOps.exif_transpose's pixel permutation for that orientation.
Image apply_exif_orientation(const Image& image, int orientation);

}  // namespace xlacel::images
