#pragma once
// Image file bytes -> RGB, as transformers reads an image file (image_utils.load_image: Pillow
// decodes it, applies the EXIF orientation, then convert("RGB"), which drops any alpha without
// compositing). PNG (libpng), JPEG (libjpeg-turbo), WebP (libwebp) and GIF (giflib, first frame)
// are recognised by their signatures. Malformed, truncated, empty, oversized (checked from the
// header, before any pixel is allocated) or unsupported files throw Error("<name>: <problem>").
#include <cstdint>
#include <span>
#include <string_view>

#include "images/image.h"

namespace xlacel::images {

// Larger images are refused from their header (Pillow itself refuses above ~179 Mpixel).
inline constexpr int kMaxImageSide = 16384;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 26;  // 64 Mpixel

// `name` (a file name, "image 2 of the request") only goes into error messages.
Image decode_image(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace xlacel::images
