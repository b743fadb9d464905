#include "images/gemma3_processor.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace xlacel::images {

Gemma3Processor Gemma3Processor::from_config(const Json& config) {
  Gemma3Processor p;
  p.do_convert_rgb_ = config_bool(config, "do_convert_rgb").value_or(true);
  p.do_resize_ = config_bool(config, "do_resize").value_or(true);
  if (auto size = config_object(config, "size")) {
    auto height = config_int(*size, "height");
    auto width = config_int(*size, "width");
    if (!height || !width) throw Error("preprocessor_config.json: size: expected height and width");
    p.height_ = *height;
    p.width_ = *width;
  }
  p.resample_ = config_resample(config, "resample").value_or(Resample::Bilinear);
  p.do_pan_and_scan_ = config_bool(config, "do_pan_and_scan").value_or(false);
  if (p.do_pan_and_scan_) {
    auto min_crop = config_int(config, "pan_and_scan_min_crop_size");
    auto max_crops = config_int(config, "pan_and_scan_max_num_crops");
    auto min_ratio = config_number(config, "pan_and_scan_min_ratio_to_activate");
    if (!min_crop || !max_crops || !min_ratio) {
      throw Error(
          "preprocessor_config.json: do_pan_and_scan needs pan_and_scan_min_crop_size, "
          "pan_and_scan_max_num_crops and pan_and_scan_min_ratio_to_activate");
    }
    p.min_crop_size_ = *min_crop;
    p.max_num_crops_ = *max_crops;
    p.min_ratio_to_activate_ = *min_ratio;
  }
  p.normalization_ =
      PixelNormalization::from_config(config, kImagenetStandardMean, kImagenetStandardStd);
  return p;
}

std::vector<Image> Gemma3Processor::pan_and_scan_crops(const Image& image) const {
  const int width = image.width, height = image.height;
  const bool landscape = width >= height;
  const int long_side = landscape ? width : height, short_side = landscape ? height : width;
  if (double(long_side) / short_side < min_ratio_to_activate_) return {};
  // Crops about as many as the aspect ratio (half rounded up), no smaller than the minimum,
  // between 2 and the maximum.
  int crops = int(std::floor(double(long_side) / short_side + 0.5));
  crops = std::min(int(std::floor(double(long_side) / min_crop_size_)), crops);
  crops = std::min(max_num_crops_, std::max(2, crops));
  const int crops_w = landscape ? crops : 1, crops_h = landscape ? 1 : crops;
  const int crop_w = int(std::ceil(double(width) / crops_w));
  const int crop_h = int(std::ceil(double(height) / crops_h));
  if (std::min(crop_w, crop_h) < min_crop_size_) return {};
  std::vector<Image> out;
  for (int r = 0; r < crops_h; ++r) {
    for (int c = 0; c < crops_w; ++c) {
      // numpy slicing clips the last crop to the image.
      const int x = c * crop_w, y = r * crop_h;
      out.push_back(crop(image, x, y, std::min(crop_w, width - x), std::min(crop_h, height - y)));
    }
  }
  return out;
}

ProcessedImage Gemma3Processor::process(const Image& input) const {
  const Image image = do_convert_rgb_ ? composite_transparent_on_white(input) : input;
  std::vector<Image> frames;
  frames.push_back(image);
  if (do_pan_and_scan_) {
    for (Image& crop_image : pan_and_scan_crops(image)) frames.push_back(std::move(crop_image));
  }
  ProcessedImage out;
  out.num_crops = int(frames.size()) - 1;
  for (Image& frame : frames) {
    if (do_resize_) frame = resize(frame, width_, height_, resample_);
    if (frame.width != frames[0].width || frame.height != frames[0].height) {
      throw Error("gemma3 processor: crops differ in size without do_resize");
    }
    normalization_.append_chw(frame, out.pixel_values);
  }
  out.shape = {int64_t(frames.size()), 3, frames[0].height, frames[0].width};
  return out;
}

}  // namespace xlacel::images
