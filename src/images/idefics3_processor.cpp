#include "images/idefics3_processor.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace xlacel::images {
namespace {

constexpr int kIdefics3MaxImageSize = 4096;  // transformers' MAX_IMAGE_SIZE

// Python's int(): truncation toward zero.
int py_int(double value) {
  return int(value);
}

// _resize_output_size_rescale_to_max_len then _resize_output_size_scale_below_upper_bound.
std::pair<int, int> longest_edge_size(int height, int width, int max_len) {
  double aspect = double(width) / height;
  if (width >= height) {
    width = max_len;
    height = py_int(width / aspect);
    if (height % 2 != 0) ++height;
  } else {
    height = max_len;
    width = py_int(height * aspect);
    if (width % 2 != 0) ++width;
  }
  height = std::max(height, 1);
  width = std::max(width, 1);
  aspect = double(width) / height;
  if (width >= height && width > kIdefics3MaxImageSize) {
    width = kIdefics3MaxImageSize;
    height = py_int(width / aspect);
  } else if (height > width && height > kIdefics3MaxImageSize) {
    height = kIdefics3MaxImageSize;
    width = py_int(height * aspect);
  }
  return {std::max(height, 1), std::max(width, 1)};
}

int ceil_to(int value, int multiple) {
  return int(std::ceil(double(value) / multiple)) * multiple;
}

}  // namespace

Idefics3Processor Idefics3Processor::from_config(const Json& config) {
  Idefics3Processor p;
  p.do_convert_rgb_ = config_bool(config, "do_convert_rgb").value_or(true);
  p.do_resize_ = config_bool(config, "do_resize").value_or(true);
  if (auto size = config_object(config, "size")) {
    if (auto edge = config_int(*size, "longest_edge")) {
      p.longest_edge_ = *edge;
    } else if (config_int(*size, "height") && config_int(*size, "width")) {
      p.longest_edge_ = 0;
      p.resize_height_ = *config_int(*size, "height");
      p.resize_width_ = *config_int(*size, "width");
    } else {
      throw Error("preprocessor_config.json: size: expected longest_edge, or height and width");
    }
  }
  if (auto max_size = config_object(config, "max_image_size")) {
    auto edge = config_int(*max_size, "longest_edge");
    if (!edge) throw Error("preprocessor_config.json: max_image_size: expected longest_edge");
    p.max_image_size_ = *edge;
  }
  p.do_image_splitting_ = config_bool(config, "do_image_splitting").value_or(true);
  p.resample_ = config_resample(config, "resample").value_or(Resample::Lanczos);
  p.normalization_ =
      PixelNormalization::from_config(config, kImagenetStandardMean, kImagenetStandardStd);
  return p;
}

Image Idefics3Processor::resized(const Image& image, int height, int width) const {
  return resize(image, width, height, resample_);
}

ProcessedImage Idefics3Processor::process(const Image& input) const {
  Image image = do_convert_rgb_ ? composite_transparent_on_white(input) : input;
  if (do_resize_) {
    auto [height, width] = longest_edge_ > 0
                               ? longest_edge_size(image.height, image.width, longest_edge_)
                               : std::pair{resize_height_, resize_width_};
    image = resized(image, height, width);
  }
  const int max = max_image_size_;
  std::vector<Image> frames;
  ProcessedImage out;
  if (do_image_splitting_) {
    // resize_for_vision_encoder: the long side up to a multiple of max, the other side from the
    // aspect ratio, then up to a multiple of max too.
    int height = image.height, width = image.width;
    double aspect = double(width) / height;
    if (width >= height) {
      width = ceil_to(width, max);
      height = ceil_to(py_int(width / aspect), max);
    } else {
      height = ceil_to(height, max);
      width = ceil_to(py_int(height * aspect), max);
    }
    image = resized(image, height, width);
    if (image.height > max || image.width > max) {
      out.rows = (image.height - max) / max + 1;
      out.cols = (image.width - max) / max + 1;
      for (int r = 0; r < out.rows; ++r) {
        for (int c = 0; c < out.cols; ++c)
          frames.push_back(crop(image, c * max, r * max, max, max));
      }
      image = resized(image, max, max);
    }
  } else {
    image = resized(image, max, max);
  }
  frames.push_back(std::move(image));
  // One image: every frame has the same size, so do_pad pads nothing.
  out.shape = {1, int64_t(frames.size()), 3, frames[0].height, frames[0].width};
  out.pixel_values.reserve(size_t(frames.size()) * 3 * frames[0].height * frames[0].width);
  for (const Image& frame : frames) normalization_.append_chw(frame, out.pixel_values);
  return out;
}

}  // namespace xlacel::images
