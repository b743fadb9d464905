// Image decoding: any bytes must either decode or raise xlacel::Error (no crash, hang or huge
// allocation); what decodes is also resized, as every processor does.
#include <cstdint>
#include <span>

#include "common/error.h"
#include "images/decode.h"
#include "images/pillow_resample.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    xlacel::images::Image image = xlacel::images::decode_image(std::span(data, size), "fuzz");
    if (int64_t(image.width) * image.height <= (1 << 16)) {
      xlacel::images::resize(image, 7, 5, xlacel::images::Resample::Lanczos);
    }
  } catch (const xlacel::Error&) {
  }
  return 0;
}
