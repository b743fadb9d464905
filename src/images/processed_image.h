#pragma once
// What an image processor returns for one image: transformers' `pixel_values` (float32, its
// shape and element order) and the family's fields the prompt expansion needs.
#include <array>
#include <cstdint>
#include <vector>

namespace xlacel::images {

struct ProcessedImage {
  std::vector<int64_t> shape;
  std::vector<float> pixel_values;
  // Idefics3 / SmolVLM: the tile grid (0 x 0 when the image was not split).
  int rows = 0;
  int cols = 0;
  // Qwen2-VL: image_grid_thw (temporal, height, width in patches).
  std::array<int64_t, 3> grid_thw{};
  // Gemma 3: pan-and-scan crops after the whole image (0 when off).
  int num_crops = 0;
};

}  // namespace xlacel::images
