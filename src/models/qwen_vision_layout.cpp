// The constants of a Qwen2.5-VL vision graph for one grid, computed on the host as transformers'
// vision_utils does (get_vision_position_ids, get_vision_window_index).
#include <algorithm>

#include "models/vision_tower.h"

namespace xlacel::models {

std::vector<std::pair<int64_t, int64_t>> qwen_vision_position_ids(const VisionConfig& config,
                                                                  const VisionGrid& grid) {
  config.check_grid(grid);
  const int64_t m = config.spatial_merge_size;
  std::vector<std::pair<int64_t, int64_t>> ids;
  ids.reserve(static_cast<size_t>(grid.patches()));
  for (int64_t t = 0; t < grid.t; ++t) {
    for (int64_t block_h = 0; block_h < grid.h / m; ++block_h) {
      for (int64_t block_w = 0; block_w < grid.w / m; ++block_w) {
        for (int64_t in_h = 0; in_h < m; ++in_h) {
          for (int64_t in_w = 0; in_w < m; ++in_w) {
            ids.emplace_back(block_h * m + in_h, block_w * m + in_w);
          }
        }
      }
    }
  }
  return ids;
}

QwenVisionWindows qwen_vision_windows(const VisionConfig& config, const VisionGrid& grid) {
  config.check_grid(grid);
  const int64_t m = config.spatial_merge_size;
  // vit_merger_window_size: a window's side in merged units.
  const int64_t side = config.window_size / m / config.patch_size;
  const int64_t rows = grid.h / m, columns = grid.w / m;
  QwenVisionWindows windows;
  windows.cu_window_seqlens.push_back(0);
  for (int64_t t = 0; t < grid.t; ++t) {
    // HF pads the unit grid to whole windows (a full window more where it divides) and drops the
    // padding: the windows that hold units, in the same order.
    for (int64_t row = 0; row < rows; row += side) {
      for (int64_t column = 0; column < columns; column += side) {
        int64_t units = 0;
        for (int64_t r = row; r < std::min(row + side, rows); ++r) {
          for (int64_t c = column; c < std::min(column + side, columns); ++c) {
            windows.window_index.push_back((t * rows + r) * columns + c);
            ++units;
          }
        }
        windows.cu_window_seqlens.push_back(windows.cu_window_seqlens.back() + units * m * m);
      }
    }
  }
  return windows;
}

}  // namespace xlacel::models
