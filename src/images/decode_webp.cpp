// WebP through libwebp (what Pillow links): the first frame, as Pillow's animation decoder
// gives it (a key frame on a transparent black canvas, so uncovered pixels are black), its RGB
// kept and alpha dropped. libwebp returns errors; it never jumps.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>

#include "common/error.h"
#include "images/decoders.h"

namespace xlacel::images {

DecodedImage decode_webp(std::span<const uint8_t> bytes, std::string_view name) {
  WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPDemuxer, decltype(&WebPDemuxDelete)> demux(WebPDemux(&data), WebPDemuxDelete);
  if (!demux) fail(name, "WebP: malformed or truncated file");
  const int64_t width = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH);
  const int64_t height = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT);
  check_image_size(width, height, name);
  WebPIterator frame;
  if (!WebPDemuxGetFrame(demux.get(), 1, &frame)) fail(name, "WebP: no frame");
  std::unique_ptr<WebPIterator, decltype(&WebPDemuxReleaseIterator)> frame_owner(
      &frame, WebPDemuxReleaseIterator);
  if (frame.x_offset < 0 || frame.y_offset < 0 || frame.width < 1 || frame.height < 1 ||
      frame.x_offset + frame.width > width || frame.y_offset + frame.height > height) {
    fail(name, "WebP: frame outside the canvas");
  }
  DecodedImage out;
  out.image = {int(width), int(height), std::vector<uint8_t>(size_t(width) * height * 3), {}};
  const size_t stride = size_t(width) * 3;
  uint8_t* origin =
      out.image.rgb.data() + size_t(frame.y_offset) * stride + size_t(frame.x_offset) * 3;
  const size_t available = out.image.rgb.size() - size_t(origin - out.image.rgb.data());
  if (WebPDecodeRGBInto(frame.fragment.bytes, frame.fragment.size, origin, available,
                        int(stride)) == nullptr) {
    fail(name, "WebP: cannot decode the image data (malformed or truncated)");
  }
  WebPChunkIterator chunk;
  if (WebPDemuxGetChunk(demux.get(), "EXIF", 1, &chunk)) {
    out.exif.assign(chunk.chunk.bytes, chunk.chunk.bytes + chunk.chunk.size);
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  return out;
}

}  // namespace xlacel::images
