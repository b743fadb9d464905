// PNG through libpng's classic API. libpng reports errors by longjmp; the setjmp frames below
// are plain C-style functions holding no C++ objects, so nothing with a destructor is skipped,
// and the Error is thrown only after they return.
#include <png.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "images/decoders.h"

namespace xlacel::images {
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t position;
  char message[160];
  // The single transparent colour Pillow keeps in info["transparency"], read before the
  // transforms drop the tRNS chunk: a palette whose tRNS makes exactly one entry transparent and
  // the rest opaque, or a gray or RGB tRNS colour.
  bool has_transparent;
  uint8_t transparent[3];
};

void png_read_from_memory(png_structp png, png_bytep out, size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->position) png_error(png, "file is truncated");
  std::memcpy(out, source->data + source->position, length);
  source->position += length;
}

void png_record_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

// Pillow opens 16-bit grayscale as I;16, whose convert("RGB") clips to 255 instead of taking
// the high byte (what it does for every other 16-bit PNG).
bool is_gray16(png_structp png, png_infop info) {
  return png_get_color_type(png, info) == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) == 16;
}

void record_transparent_colour(png_structp png, png_infop info) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  png_bytep alphas = nullptr;
  int count = 0;
  png_color_16p colour = nullptr;
  if (png_get_tRNS(png, info, &alphas, &count, &colour) == 0) return;
  const int color_type = png_get_color_type(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_colorp palette = nullptr;
    int entries = 0;
    if (alphas == nullptr || png_get_PLTE(png, info, &palette, &entries) == 0) return;
    int transparent = -1;
    for (int i = 0; i < count; ++i) {
      if (alphas[i] == 0 && transparent < 0) {
        transparent = i;
      } else if (alphas[i] != 255) {
        return;  // Pillow keeps such a tRNS as bytes, which convert("RGB") drops
      }
    }
    if (transparent < 0) return;
    const png_color c = transparent < entries ? palette[transparent] : png_color{0, 0, 0};
    source->transparent[0] = c.red, source->transparent[1] = c.green,
    source->transparent[2] = c.blue;
    source->has_transparent = true;
  } else if (colour != nullptr) {
    // Pillow keeps the tRNS samples as read, and transformers' convert("RGBA") compares pixels
    // with their low bytes. A tuple in RGB (8- or 16-bit); in L (gray of 2, 4 or 8 bits) an
    // integer that convert("RGB") turns into the gray clipped to 255; in "1" (1-bit gray) 255 or 0
    // and in I;16 (16-bit gray) the sample, integers that the RGBA conversion takes as red alone.
    const int depth = png_get_bit_depth(png, info);
    std::array<png_uint_16, 3> values{colour->red, colour->green, colour->blue};
    if (color_type == PNG_COLOR_TYPE_GRAY && depth == 1) {
      values = {png_uint_16(colour->gray != 0 ? 255 : 0), 0, 0};
    } else if (color_type == PNG_COLOR_TYPE_GRAY && depth == 16) {
      values = {colour->gray, 0, 0};
    } else if (color_type == PNG_COLOR_TYPE_GRAY) {
      const auto gray = std::min<png_uint_16>(colour->gray, 255);
      values = {gray, gray, gray};
    }
    for (int c = 0; c < 3; ++c) source->transparent[c] = uint8_t(values[c] & 0xff);
    source->has_transparent = true;
  }
}

// Reads the header (chunks before the image data). 0 on error.
int png_read_header(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return 0;
  png_read_info(png, info);
  record_transparent_colour(png, info);
  return 1;
}

// Sets the transforms to 8-bit RGB: palettes expanded, gray replicated, 16-bit samples cut to
// their high byte, alpha dropped; libpng allocates its row buffers here. 0 on error.
int png_set_transforms(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return 0;
  const int color_type = png_get_color_type(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (is_gray16(png, info)) {
    png_set_swap(png);  // native-endian 16-bit gray, converted by the caller
  } else {
    if (png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
    if (!(color_type & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  }
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return 1;
}

int png_read_pixels(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return 0;
  png_read_image(png, rows);
  png_read_end(png, info);
  return 1;
}

struct PngHandles {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngHandles() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

}  // namespace

DecodedImage decode_png(std::span<const uint8_t> bytes, std::string_view name) {
  PngSource source{bytes.data(), bytes.size(), 0, "unknown error", false, {}};
  PngHandles handles;
  handles.png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_record_error, png_ignore_warning);
  if (handles.png == nullptr) fail(name, "PNG: out of memory");
  handles.info = png_create_info_struct(handles.png);
  if (handles.info == nullptr) fail(name, "PNG: out of memory");
  png_set_read_fn(handles.png, &source, png_read_from_memory);
  png_set_chunk_malloc_max(handles.png, 8 << 20);  // ancillary chunks (text, eXIf) bounded
  if (!png_read_header(handles.png, handles.info)) fail(name, "PNG: {}", source.message);
  const int64_t width = png_get_image_width(handles.png, handles.info);
  const int64_t height = png_get_image_height(handles.png, handles.info);
  check_image_size(width, height, name);
  if (!png_set_transforms(handles.png, handles.info)) fail(name, "PNG: {}", source.message);
  const bool gray16 = is_gray16(handles.png, handles.info);
  const size_t row_bytes = png_get_rowbytes(handles.png, handles.info);
  if (row_bytes != size_t(width) * (gray16 ? 2 : 3)) fail(name, "PNG: unexpected row layout");
  std::vector<uint8_t> pixels(row_bytes * height);
  std::vector<png_bytep> rows(height);
  for (int64_t y = 0; y < height; ++y) rows[y] = pixels.data() + y * row_bytes;
  if (!png_read_pixels(handles.png, handles.info, rows.data())) {
    fail(name, "PNG: {}", source.message);
  }
  DecodedImage out;
  out.image = {int(width), int(height), {}, {}};
  if (gray16) {
    out.image.rgb.resize(size_t(width) * height * 3);
    for (size_t i = 0; i < size_t(width) * height; ++i) {
      uint16_t value;
      std::memcpy(&value, &pixels[i * 2], 2);
      std::memset(&out.image.rgb[i * 3], value > 255 ? 255 : value, 3);
    }
  } else {
    out.image.rgb = std::move(pixels);
  }
  if (source.has_transparent) {
    out.image.transparent_rgb = {source.transparent[0], source.transparent[1],
                                 source.transparent[2]};
  }
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(handles.png, handles.info, &exif_size, &exif) != 0 && exif != nullptr) {
    out.exif.assign(exif, exif + exif_size);
  }
  return out;
}

}  // namespace xlacel::images
