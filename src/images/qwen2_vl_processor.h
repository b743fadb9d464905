#pragma once
// Qwen2-VL / Qwen2.5-VL (transformers.Qwen2VLImageProcessorPil) for one image: smart_resize
// (both sides multiples of patch_size * merge_size, the pixel count within [min_pixels,
// max_pixels], aspect ratio kept; aspect ratios over 200 refused), rescale, normalize, then
// flattened into patches: pixel_values [grid_h * grid_w, 3 * temporal_patch_size * patch_size^2],
// rows in merge-block order, each row channel, time (the image repeated), y, x.
#include <string_view>
#include <utility>

#include "common/json_file.h"
#include "images/image.h"
#include "images/pillow_resample.h"
#include "images/processed_image.h"
#include "images/processor_config.h"

namespace xlacel::images {

class Qwen2VLProcessor {
 public:
  static Qwen2VLProcessor from_config(const Json& config);  // preprocessor_config.json
  // `name` goes into the error for an aspect ratio over 200.
  ProcessedImage process(const Image& image, std::string_view name = "image") const;
  // transformers' smart_resize: (height, width); Error naming `where` past the aspect limit.
  std::pair<int, int> smart_resize(int height, int width, std::string_view where) const;

 private:
  bool do_convert_rgb_ = true;
  bool do_resize_ = true;
  int64_t min_pixels_ = 56 * 56;
  int64_t max_pixels_ = 28 * 28 * 1280;
  int patch_size_ = 14;
  int temporal_patch_size_ = 2;
  int merge_size_ = 2;
  Resample resample_ = Resample::Bicubic;
  PixelNormalization normalization_;
};

}  // namespace xlacel::images
