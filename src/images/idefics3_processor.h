#pragma once
// Idefics3 / SmolVLM (transformers.Idefics3ImageProcessorPil) for one image: resize so the longest
// edge is size.longest_edge (even short edge, at most 4096), then up to multiples of
// max_image_size.longest_edge, split into max x max tiles row by row plus the whole image resized
// to max x max; rescale, normalize. pixel_values: [1, tiles + 1, 3, max, max] ([1, 1, 3, h, w]
// unsplit); rows x cols is the tile grid.
#include "common/json_file.h"
#include "images/image.h"
#include "images/pillow_resample.h"
#include "images/processed_image.h"
#include "images/processor_config.h"

namespace xlacel::images {

class Idefics3Processor {
 public:
  static Idefics3Processor from_config(const Json& config);  // preprocessor_config.json
  ProcessedImage process(const Image& image) const;

 private:
  Image resized(const Image& image, int height, int width) const;

  bool do_convert_rgb_ = true;
  bool do_resize_ = true;
  int longest_edge_ = 4 * 364;  // size.longest_edge
  int resize_height_ = 0;       // or size.height x size.width
  int resize_width_ = 0;
  int max_image_size_ = 364;
  bool do_image_splitting_ = true;
  Resample resample_ = Resample::Lanczos;
  PixelNormalization normalization_;
};

}  // namespace xlacel::images
