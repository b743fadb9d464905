#include "images/qwen2_vl_processor.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace xlacel::images {

Qwen2VLProcessor Qwen2VLProcessor::from_config(const Json& config) {
  Qwen2VLProcessor p;
  p.do_convert_rgb_ = config_bool(config, "do_convert_rgb").value_or(true);
  p.do_resize_ = config_bool(config, "do_resize").value_or(true);
  // size {shortest_edge: min_pixels, longest_edge: max_pixels}; top-level min_pixels and
  // max_pixels override it, as the processor's __init__ does.
  if (auto size = config_object(config, "size")) {
    p.min_pixels_ = config_int(*size, "shortest_edge").value_or(int(p.min_pixels_));
    p.max_pixels_ = config_int(*size, "longest_edge").value_or(int(p.max_pixels_));
  }
  p.min_pixels_ = config_int(config, "min_pixels").value_or(int(p.min_pixels_));
  p.max_pixels_ = config_int(config, "max_pixels").value_or(int(p.max_pixels_));
  p.patch_size_ = config_int(config, "patch_size").value_or(14);
  p.temporal_patch_size_ = config_int(config, "temporal_patch_size").value_or(2);
  p.merge_size_ = config_int(config, "merge_size").value_or(2);
  p.resample_ = config_resample(config, "resample").value_or(Resample::Bicubic);
  p.normalization_ = PixelNormalization::from_config(config, kOpenAiClipMean, kOpenAiClipStd);
  if (p.patch_size_ > 1024 || p.merge_size_ > 64 || p.temporal_patch_size_ > 64) {
    throw Error(
        "preprocessor_config.json: patch_size, merge_size or temporal_patch_size too large");
  }
  return p;
}

std::pair<int, int> Qwen2VLProcessor::smart_resize(int height, int width,
                                                   std::string_view where) const {
  const double factor = patch_size_ * merge_size_;
  const double ratio = double(std::max(height, width)) / std::min(height, width);
  if (ratio > 200) {
    fail(where, "absolute aspect ratio must be smaller than 200, got {}", ratio);
  }
  // Python's round() rounds half to even, as nearbyint does in the default rounding mode.
  double h_bar = std::nearbyint(height / factor) * factor;
  double w_bar = std::nearbyint(width / factor) * factor;
  if (h_bar * w_bar > double(max_pixels_)) {
    double beta = std::sqrt(double(height) * width / double(max_pixels_));
    h_bar = std::max(factor, std::floor(height / beta / factor) * factor);
    w_bar = std::max(factor, std::floor(width / beta / factor) * factor);
  } else if (h_bar * w_bar < double(min_pixels_)) {
    double beta = std::sqrt(double(min_pixels_) / (double(height) * width));
    h_bar = std::ceil(height * beta / factor) * factor;
    w_bar = std::ceil(width * beta / factor) * factor;
  }
  if (h_bar < factor || w_bar < factor || h_bar * w_bar > double(int64_t{1} << 28)) {
    fail(where, "cannot resize {}x{} for this processor", width, height);
  }
  return {int(h_bar), int(w_bar)};
}

ProcessedImage Qwen2VLProcessor::process(const Image& input, std::string_view name) const {
  Image image = do_convert_rgb_ ? composite_transparent_on_white(input) : input;
  if (do_resize_) {
    auto [height, width] = smart_resize(image.height, image.width, name);
    image = resize(image, width, height, resample_);
  }
  const int p = patch_size_, m = merge_size_, t = temporal_patch_size_;
  if (image.height % (p * m) != 0 || image.width % (p * m) != 0) {
    fail(name, "{}x{} is not a multiple of patch_size * merge_size", image.width, image.height);
  }
  std::vector<float> chw;
  normalization_.append_chw(image, chw);
  const int grid_h = image.height / p, grid_w = image.width / p;
  const size_t plane = size_t(image.width) * image.height;
  const size_t row_size = size_t(3) * t * p * p;
  ProcessedImage out;
  out.grid_thw = {1, grid_h, grid_w};
  out.shape = {int64_t(grid_h) * grid_w, int64_t(row_size)};
  out.pixel_values.resize(size_t(grid_h) * grid_w * row_size);
  // transformers' order: (h block, w block, merge row, merge column) per row; within a row
  // (channel, time, y, x), every time step the same image.
  float* dst = out.pixel_values.data();
  for (int hb = 0; hb < grid_h / m; ++hb) {
    for (int wb = 0; wb < grid_w / m; ++wb) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw) {
          const int y0 = (hb * m + mh) * p, x0 = (wb * m + mw) * p;
          for (int c = 0; c < 3; ++c) {
            for (int step = 0; step < t; ++step) {
              for (int y = 0; y < p; ++y) {
                const float* src = &chw[c * plane + size_t(y0 + y) * image.width + x0];
                dst = std::copy(src, src + p, dst);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace xlacel::images
