// JPEG through libjpeg-turbo with Pillow's decoder settings (islow DCT, fancy upsampling: the
// library's defaults). libjpeg reports errors by longjmp; the setjmp frames below are C-style
// functions holding no C++ objects, and the Error is thrown after they return.
#include <cstdio>
// jpeglib.h needs stdio's FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <vector>

#include "common/error.h"
#include "images/decoders.h"

namespace xlacel::images {
namespace {

struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg sees a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

void jpeg_error_jump(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings are ignored, as Pillow ignores them, except running out of data: Pillow refuses a
// truncated file ("image file is truncated").
void jpeg_warning(j_common_ptr cinfo, int level) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) errors->truncated = true;
}

// Bounds the work a crafted progressive file can ask for.
void jpeg_limit_scans(j_common_ptr cinfo) {
  auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (dinfo->input_scan_number > 1000) {
    std::snprintf(reinterpret_cast<JpegErrors*>(cinfo->err)->message, JMSG_LENGTH_MAX,
                  "more than 1000 scans");
    std::longjmp(reinterpret_cast<JpegErrors*>(cinfo->err)->jump, 1);
  }
}

struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  jpeg_progress_mgr progress;
};

// Reads the header and starts decompression to RGB, grayscale or (4 components) CMYK.
int jpeg_start(JpegState* state, const uint8_t* data, size_t size) {
  if (setjmp(state->errors.jump)) return 0;
  jpeg_create_decompress(&state->cinfo);
  state->cinfo.progress = &state->progress;
  jpeg_mem_src(&state->cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&state->cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&state->cinfo, TRUE);
  switch (state->cinfo.num_components) {
    case 1:
      state->cinfo.out_color_space = JCS_GRAYSCALE;
      break;
    case 3:
      state->cinfo.out_color_space = JCS_RGB;
      break;
    case 4:
      state->cinfo.out_color_space = JCS_CMYK;
      break;
    default:
      std::snprintf(state->errors.message, JMSG_LENGTH_MAX, "unsupported component count");
      return 0;
  }
  return 1;
}

int jpeg_decode(JpegState* state, uint8_t* pixels, size_t row_bytes) {
  if (setjmp(state->errors.jump)) return 0;
  jpeg_start_decompress(&state->cinfo);
  while (state->cinfo.output_scanline < state->cinfo.output_height) {
    JSAMPROW row = pixels + size_t(state->cinfo.output_scanline) * row_bytes;
    jpeg_read_scanlines(&state->cinfo, &row, 1);
  }
  jpeg_finish_decompress(&state->cinfo);
  return 1;
}

struct JpegHandle {
  JpegState state{};
  ~JpegHandle() { jpeg_destroy_decompress(&state.cinfo); }
};

}  // namespace

DecodedImage decode_jpeg(std::span<const uint8_t> bytes, std::string_view name) {
  JpegHandle handle;
  JpegState& state = handle.state;
  state.cinfo.err = jpeg_std_error(&state.errors.manager);
  state.errors.manager.error_exit = jpeg_error_jump;
  state.errors.manager.emit_message = jpeg_warning;
  state.progress.progress_monitor = jpeg_limit_scans;
  if (!jpeg_start(&state, bytes.data(), bytes.size())) fail(name, "JPEG: {}", state.errors.message);
  check_image_size(state.cinfo.image_width, state.cinfo.image_height, name);
  DecodedImage out;
  // The saved markers live until jpeg_finish_decompress.
  for (jpeg_saved_marker_ptr marker = state.cinfo.marker_list; marker; marker = marker->next) {
    if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 6 &&
        std::equal(marker->data, marker->data + 6, "Exif\0\0")) {
      out.exif.assign(marker->data, marker->data + marker->data_length);
      break;
    }
  }
  const int components = state.cinfo.num_components;
  const size_t width = state.cinfo.image_width, height = state.cinfo.image_height;
  std::vector<uint8_t> pixels(width * height * components);
  if (!jpeg_decode(&state, pixels.data(), width * components)) {
    fail(name, "JPEG: {}", state.errors.message);
  }
  if (state.errors.truncated) fail(name, "JPEG: file is truncated");
  out.image = {int(width), int(height), std::vector<uint8_t>(width * height * 3), {}};
  uint8_t* rgb = out.image.rgb.data();
  for (size_t i = 0; i < width * height; ++i) {
    const uint8_t* p = &pixels[i * components];
    if (components == 1) {
      rgb[i * 3] = rgb[i * 3 + 1] = rgb[i * 3 + 2] = p[0];
    } else if (components == 3) {
      rgb[i * 3] = p[0], rgb[i * 3 + 1] = p[1], rgb[i * 3 + 2] = p[2];
    } else {
      // Pillow reads 4-component JPEGs as Adobe's inverted CMYK ("CMYK;I"), then
      // convert("RGB"): nk = 255 - k; channel = nk - round(c * nk / 255).
      const int nk = p[3];
      for (int c = 0; c < 3; ++c) {
        const int tmp = (255 - p[c]) * nk + 128;
        rgb[i * 3 + c] = uint8_t(std::clamp(nk - (((tmp >> 8) + tmp) >> 8), 0, 255));
      }
    }
  }
  return out;
}

}  // namespace xlacel::images
