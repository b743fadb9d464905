#pragma once
// preprocessor_config.json fields as transformers reads them: a missing key keeps the
// processor's default, as does null, except for booleans, where null (None) reads as false; a
// value of the wrong type is an Error naming the key; unknown keys are ignored. Also the
// rescale-and-normalize step every family shares.
#include <array>
#include <optional>
#include <string_view>

#include "common/json_file.h"
#include "images/image.h"
#include "images/pillow_resample.h"

namespace xlacel::images {

std::optional<bool> config_bool(const Json& config, std::string_view key);
std::optional<int> config_int(const Json& config, std::string_view key);  // positive
std::optional<double> config_number(const Json& config, std::string_view key);
// A nested object such as "size": {"height": ..}; nullopt when missing or null.
std::optional<Json> config_object(const Json& config, std::string_view key);
std::optional<Resample> config_resample(const Json& config, std::string_view key);

// do_rescale (x * rescale_factor, in double, stored as float32) then do_normalize
// ((x - mean) / std in float32), as transformers' numpy rescale and normalize compute them.
struct PixelNormalization {
  bool rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool normalize = true;
  std::array<float, 3> mean{};
  std::array<float, 3> std{};

  // Reads do_rescale, rescale_factor, do_normalize, image_mean, image_std over the defaults.
  // The defaults are Python floats (doubles), rounded to float32 as numpy does.
  static PixelNormalization from_config(const Json& config, const std::array<double, 3>& mean,
                                        const std::array<double, 3>& std);
  float apply(uint8_t value, int channel) const;
  // The image as channels-first floats [3, height, width], appended to `out`.
  void append_chw(const Image& image, std::vector<float>& out) const;
};

// transformers.image_utils' constants.
inline constexpr std::array<double, 3> kImagenetStandardMean{0.5, 0.5, 0.5};
inline constexpr std::array<double, 3> kImagenetStandardStd{0.5, 0.5, 0.5};
inline constexpr std::array<double, 3> kOpenAiClipMean{0.48145466, 0.4578275, 0.40821073};
inline constexpr std::array<double, 3> kOpenAiClipStd{0.26862954, 0.26130258, 0.27577711};

}  // namespace xlacel::images
