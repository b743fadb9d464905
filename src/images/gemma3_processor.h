#pragma once
// Gemma 3 (transformers.Gemma3ImageProcessorPil) for one image: resize to size.height x size.width
// (896 x 896 for the real models), rescale, normalize. With do_pan_and_scan, a wide or tall
// image is also cut into 2..max crops along its long side, each processed like the image.
// pixel_values: [1 + num_crops, 3, height, width].
#include "common/json_file.h"
#include "images/image.h"
#include "images/pillow_resample.h"
#include "images/processed_image.h"
#include "images/processor_config.h"

namespace xlacel::images {

class Gemma3Processor {
 public:
  static Gemma3Processor from_config(const Json& config);  // preprocessor_config.json
  ProcessedImage process(const Image& image) const;

 private:
  std::vector<Image> pan_and_scan_crops(const Image& image) const;

  bool do_convert_rgb_ = true;
  bool do_resize_ = true;
  int height_ = 224;
  int width_ = 224;
  Resample resample_ = Resample::Bilinear;
  bool do_pan_and_scan_ = false;
  int min_crop_size_ = 0;
  int max_num_crops_ = 0;
  double min_ratio_to_activate_ = 0;
  PixelNormalization normalization_;
};

}  // namespace xlacel::images
