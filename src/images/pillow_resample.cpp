#include "images/pillow_resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "common/error.h"

namespace xlacel::images {
namespace {

// Pillow's filters (double precision; Hamming's constants are float literals there too).
double box_filter(double x) {
  return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
}

double bilinear_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  x = std::fabs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos_filter(double x) {
  return (-3.0 <= x && x < 3.0) ? sinc_filter(x) * sinc_filter(x / 3) : 0.0;
}

struct Filter {
  double (*function)(double);
  double support;
};

Filter filter_for(Resample resample) {
  switch (resample) {
    case Resample::Box:
      return {box_filter, 0.5};
    case Resample::Bilinear:
      return {bilinear_filter, 1.0};
    case Resample::Hamming:
      return {hamming_filter, 1.0};
    case Resample::Bicubic:
      return {bicubic_filter, 2.0};
    case Resample::Lanczos:
      return {lanczos_filter, 3.0};
    case Resample::Nearest:
      break;
  }
  throw Error("resize: NEAREST resampling is not supported");
}

constexpr int kPrecisionBits = 32 - 8 - 2;

// One axis' weights: for output index i, inputs [first[i], first[i] + count[i]) weighted by
// weights[i * stride ...], in Pillow's fixed point.
struct AxisWeights {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
  int stride = 0;
};

AxisWeights axis_weights(int in_size, int out_size, const Filter& filter) {
  // Pillow's box is float (0, in_size); the scale and every position are double.
  const float in0 = 0.0f;
  const float in1 = float(in_size);
  double scale = double(in1 - in0) / out_size;
  double filterscale = std::max(scale, 1.0);
  double support = filter.support * filterscale;
  AxisWeights axis;
  axis.stride = int(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(size_t(out_size) * axis.stride, 0);
  std::vector<double> k(axis.stride);
  double inv_filterscale = 1.0 / filterscale;
  for (int i = 0; i < out_size; ++i) {
    double center = in0 + (i + 0.5) * scale;
    int xmin = std::max(int(center - support + 0.5), 0);
    int xmax = std::min(int(center + support + 0.5), in_size) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = filter.function((x + xmin - center + 0.5) * inv_filterscale);
      sum += k[x];
    }
    int32_t* fixed = &axis.weights[size_t(i) * axis.stride];
    for (int x = 0; x < xmax; ++x) {
      double w = sum != 0.0 ? k[x] / sum : k[x];
      fixed[x] = w < 0 ? int32_t(-0.5 + w * (1 << kPrecisionBits))
                       : int32_t(0.5 + w * (1 << kPrecisionBits));
    }
    axis.first[i] = xmin;
    axis.count[i] = std::max(xmax, 0);
  }
  return axis;
}

uint8_t clip8(int32_t sum) {
  return uint8_t(std::clamp(sum >> kPrecisionBits, 0, 255));
}

constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// Rows [row_first, row_first + rows) of `in`, each resampled to out_width.
Image horizontal_pass(const Image& in, int row_first, int rows, int out_width,
                      const AxisWeights& axis) {
  Image out{out_width, rows, std::vector<uint8_t>(size_t(out_width) * rows * 3), std::nullopt};
  for (int y = 0; y < rows; ++y) {
    const uint8_t* line = in.pixel(0, row_first + y);
    uint8_t* out_line = &out.rgb[size_t(y) * out_width * 3];
    for (int i = 0; i < out_width; ++i) {
      const int32_t* k = &axis.weights[size_t(i) * axis.stride];
      const uint8_t* src = line + size_t(axis.first[i]) * 3;
      int32_t r = kHalf, g = kHalf, b = kHalf;
      for (int x = 0; x < axis.count[i]; ++x) {
        r += src[x * 3 + 0] * k[x];
        g += src[x * 3 + 1] * k[x];
        b += src[x * 3 + 2] * k[x];
      }
      out_line[i * 3 + 0] = clip8(r);
      out_line[i * 3 + 1] = clip8(g);
      out_line[i * 3 + 2] = clip8(b);
    }
  }
  return out;
}

// Each output row a weighted sum of rows of `in` (whose row 0 is source row `row_offset`).
Image vertical_pass(const Image& in, int row_offset, int out_height, const AxisWeights& axis) {
  const size_t line_size = size_t(in.width) * 3;
  Image out{in.width, out_height, std::vector<uint8_t>(line_size * out_height), std::nullopt};
  std::vector<int32_t> sums(line_size);
  for (int j = 0; j < out_height; ++j) {
    std::fill(sums.begin(), sums.end(), kHalf);
    const int32_t* k = &axis.weights[size_t(j) * axis.stride];
    for (int y = 0; y < axis.count[j]; ++y) {
      const uint8_t* line = &in.rgb[size_t(axis.first[j] - row_offset + y) * line_size];
      const int32_t weight = k[y];
      for (size_t x = 0; x < line_size; ++x) sums[x] += line[x] * weight;
    }
    uint8_t* out_line = &out.rgb[size_t(j) * line_size];
    for (size_t x = 0; x < line_size; ++x) out_line[x] = clip8(sums[x]);
  }
  return out;
}

}  // namespace

Resample resample_from_int(int value, std::string_view where) {
  if (value < 1 || value > 5) {
    fail(where, "resample {} is not supported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)",
         value);
  }
  return Resample(value);
}

Image resize(const Image& image, int width, int height, Resample resample) {
  if (width < 1 || height < 1 || image.width < 1 || image.height < 1) {
    fail("resize", "cannot resize {}x{} to {}x{}", image.width, image.height, width, height);
  }
  if (width == image.width && height == image.height) return image;
  const Filter filter = filter_for(resample);
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;
  AxisWeights rows = axis_weights(image.height, height, filter);
  // Pillow 13 (libImaging/Resample.c, ImagingResampleInner) runs the vertical pass first when the
  // height shrinks by more than twice as many pixels as the width does (a width that grows counts
  // as a negative shrink). The passes round to 8 bits in between, so the order shows.
  const int64_t height_shrink = int64_t(image.height) - height;
  const int64_t width_shrink = int64_t(image.width) - width;
  if (height_shrink > 0 && height_shrink > width_shrink * 2) {
    Image shrunk = vertical_pass(image, 0, height, rows);
    if (!horizontal) return shrunk;
    return horizontal_pass(shrunk, 0, height, width, axis_weights(image.width, width, filter));
  }
  if (!horizontal) return vertical_pass(image, 0, height, rows);
  // Otherwise only the source rows the vertical pass reads go through the horizontal pass.
  const int row_first = rows.first[0];
  const int row_last = rows.first[height - 1] + rows.count[height - 1];
  Image stretched = horizontal_pass(image, row_first, row_last - row_first, width,
                                    axis_weights(image.width, width, filter));
  if (!vertical) return stretched;
  return vertical_pass(stretched, row_first, height, rows);
}

}  // namespace xlacel::images
