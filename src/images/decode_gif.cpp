// GIF through giflib: the first frame, as Pillow opens it (mode P, or L when its colour tables
// are absent or the gray ramp) and convert("RGB") maps it: the canvas (grown to hold the frame)
// starts as the frame's transparent index if it has one, else index 0; in mode P, indices past
// the colour table are black (the transparent index's colour too); in mode L each is its gray.
// giflib returns errors; it never jumps.
#include <gif_lib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "common/error.h"
#include "images/decoders.h"

namespace xlacel::images {
namespace {

struct GifSource {
  std::span<const uint8_t> bytes;
  size_t position = 0;
};

int gif_read_from_memory(GifFileType* gif, GifByteType* out, int length) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  size_t n = std::min(size_t(std::max(length, 0)), source->bytes.size() - source->position);
  std::memcpy(out, source->bytes.data() + source->position, n);
  source->position += n;
  return int(n);
}

bool is_gray_ramp(const ColorMapObject& table) {
  for (int i = 0; i < table.ColorCount; ++i) {
    const GifColorType& c = table.Colors[i];
    if (c.Red != i || c.Green != i || c.Blue != i) return false;
  }
  return true;
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

}  // namespace

DecodedImage decode_gif(std::span<const uint8_t> bytes, std::string_view name) {
  GifSource source{bytes};
  int error = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&source, gif_read_from_memory, &error));
  auto gif_fail = [&](int code) {
    fail(name, "GIF: {}", GifErrorString(code) ? GifErrorString(code) : "error");
  };
  if (!gif) gif_fail(error);
  int transparent = -1;
  for (;;) {
    GifRecordType record;
    if (DGifGetRecordType(gif.get(), &record) == GIF_ERROR) gif_fail(gif->Error);
    if (record == TERMINATE_RECORD_TYPE) fail(name, "GIF: no image in the file");
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR) gif_fail(gif->Error);
      // A graphic control extension's transparent index applies to the next image.
      if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && block[0] >= 4) {
        transparent = (block[1] & 1) ? block[4] : -1;
      }
      while (block != nullptr) {
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR) gif_fail(gif->Error);
      }
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) gif_fail(gif->Error);
    break;
  }
  const GifImageDesc& desc = gif->Image;
  const int64_t width = std::max<int64_t>(gif->SWidth, int64_t(desc.Left) + desc.Width);
  const int64_t height = std::max<int64_t>(gif->SHeight, int64_t(desc.Top) + desc.Height);
  check_image_size(width, height, name);
  if (desc.Width < 1 || desc.Height < 1) fail(name, "GIF: empty frame");
  std::vector<uint8_t> indices(size_t(width) * height, uint8_t(transparent >= 0 ? transparent : 0));
  std::vector<GifPixelType> line(desc.Width);
  // Interlaced frames store rows in four passes.
  static constexpr std::array<std::array<int, 2>, 4> kPasses{{{0, 8}, {4, 8}, {2, 4}, {1, 2}}};
  auto store_row = [&](int row) {
    if (DGifGetLine(gif.get(), line.data(), desc.Width) == GIF_ERROR) gif_fail(gif->Error);
    std::copy(line.begin(), line.end(), &indices[size_t(desc.Top + row) * width + desc.Left]);
  };
  if (desc.Interlace) {
    for (const auto& [first, step] : kPasses) {
      for (int row = first; row < desc.Height; row += step) store_row(row);
    }
  } else {
    for (int row = 0; row < desc.Height; ++row) store_row(row);
  }
  // Pillow keeps a colour table only if it is not the gray ramp (entry i = (i, i, i)), the frame's
  // own before the global one; with neither, the frame is mode L: each index its own gray level.
  const ColorMapObject* map = nullptr;
  for (const ColorMapObject* table : {desc.ColorMap, gif->SColorMap}) {
    if (table != nullptr && !is_gray_ramp(*table)) {
      map = table;
      break;
    }
  }
  std::array<std::array<uint8_t, 3>, 256> palette{};
  for (int i = 0; i < 256; ++i) {
    if (map == nullptr) {
      palette[i] = {uint8_t(i), uint8_t(i), uint8_t(i)};
    } else if (i < map->ColorCount) {
      palette[i] = {map->Colors[i].Red, map->Colors[i].Green, map->Colors[i].Blue};
    }
  }
  DecodedImage out;
  out.image = {int(width), int(height), std::vector<uint8_t>(indices.size() * 3), {}};
  if (transparent >= 0) out.image.transparent_rgb = palette[transparent];
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(&out.image.rgb[i * 3], palette[indices[i]].data(), 3);
  }
  return out;
}

}  // namespace xlacel::images
