// Image decoding: any bytes must either decode or raise xlacel::Error (no crash, hang or huge
// allocation); what decodes is also composited and resized, as every processor does, to a size
// and with a filter taken from the input's last bytes (upscales, shrinks, sides of one pixel).
#include <cstdint>
#include <span>

#include "common/error.h"
#include "images/decode.h"
#include "images/image.h"
#include "images/pillow_resample.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    xlacel::images::Image image = xlacel::images::decode_image(std::span(data, size), "fuzz");
    image = xlacel::images::composite_transparent_on_white(image);
    if (int64_t(image.width) * image.height <= (1 << 16) && size >= 3) {
      const int width = 1 + data[size - 1] % 97, height = 1 + data[size - 2] % 89;
      const int filter = 1 + data[size - 3] % 5;
      xlacel::images::resize(image, width, height, xlacel::images::Resample(filter));
    }
  } catch (const xlacel::Error&) {
  }
  return 0;
}
