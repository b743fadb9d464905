#include "images/processor_config.h"

#include <string>

#include "common/error.h"

namespace xlacel::images {
namespace {

std::string field(std::string_view key) {
  return "preprocessor_config.json: " + std::string(key);
}

const Json* present(const Json& config, std::string_view key) {
  if (!config.is_object()) throw Error("preprocessor_config.json: not a JSON object");
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return nullptr;
  return &*it;
}

std::array<float, 3> config_triple(const Json& config, std::string_view key,
                                   const std::array<double, 3>& fallback) {
  std::array<double, 3> values = fallback;
  if (const Json* value = present(config, key)) {
    if (value->is_number()) {
      values.fill(value->get<double>());
    } else if (value->is_array() && value->size() == 3) {
      for (size_t c = 0; c < 3; ++c) {
        if (!(*value)[c].is_number()) fail(field(key), "expected 3 numbers");
        values[c] = (*value)[c].get<double>();
      }
    } else {
      fail(field(key), "expected a number or 3 numbers, got {}", value->dump());
    }
  }
  return {float(values[0]), float(values[1]), float(values[2])};
}

}  // namespace

// The value at `key` when present and accepted by `valid`; else nullopt (absent or null) or an
// Error saying what was `expected`.
template <typename Valid>
const Json* checked(const Json& config, std::string_view key, Valid valid, const char* expected) {
  const Json* value = present(config, key);
  if (value != nullptr && !valid(*value)) {
    fail(field(key), "expected {}, got {}", expected, value->dump());
  }
  return value;
}

std::optional<bool> config_bool(const Json& config, std::string_view key) {
  // An explicit null becomes the processor's attribute as None, which reads as false (Gemma 3's
  // "do_convert_rgb": null turns the conversion off).
  if (config.is_object() && config.contains(std::string(key)) &&
      config[std::string(key)].is_null()) {
    return false;
  }
  const Json* value = checked(
      config, key, [](const Json& v) { return v.is_boolean(); }, "true or false");
  return value ? std::optional(value->get<bool>()) : std::nullopt;
}

std::optional<int> config_int(const Json& config, std::string_view key) {
  auto positive = [](const Json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t{1} << 30);
  };
  const Json* value = checked(config, key, positive, "a positive integer");
  return value ? std::optional(int(value->get<int64_t>())) : std::nullopt;
}

std::optional<double> config_number(const Json& config, std::string_view key) {
  const Json* value = checked(
      config, key, [](const Json& v) { return v.is_number(); }, "a number");
  return value ? std::optional(value->get<double>()) : std::nullopt;
}

std::optional<Json> config_object(const Json& config, std::string_view key) {
  const Json* value = checked(
      config, key, [](const Json& v) { return v.is_object(); }, "an object");
  return value ? std::optional(*value) : std::nullopt;
}

std::optional<Resample> config_resample(const Json& config, std::string_view key) {
  const Json* value = checked(
      config, key, [](const Json& v) { return v.is_number_integer(); }, "an integer");
  if (value == nullptr) return std::nullopt;
  return resample_from_int(value->get<int>(), field(key));
}

PixelNormalization PixelNormalization::from_config(const Json& config,
                                                   const std::array<double, 3>& mean,
                                                   const std::array<double, 3>& std) {
  PixelNormalization n;
  n.rescale = config_bool(config, "do_rescale").value_or(true);
  n.rescale_factor = config_number(config, "rescale_factor").value_or(1.0 / 255.0);
  n.normalize = config_bool(config, "do_normalize").value_or(true);
  n.mean = config_triple(config, "image_mean", mean);
  n.std = config_triple(config, "image_std", std);
  return n;
}

float PixelNormalization::apply(uint8_t value, int channel) const {
  // numpy: uint8 -> float64 times the factor -> float32; then float32 (x - mean) / std.
  float x = rescale ? float(double(value) * rescale_factor) : float(value);
  return normalize ? (x - mean[channel]) / std[channel] : x;
}

void PixelNormalization::append_chw(const Image& image, std::vector<float>& out) const {
  // Each channel maps 256 byte values; a table per channel makes the per-pixel work a lookup.
  std::array<std::array<float, 256>, 3> table;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) table[c][v] = apply(uint8_t(v), c);
  }
  const size_t plane = size_t(image.width) * image.height;
  size_t base = out.size();
  out.resize(base + plane * 3);
  for (int c = 0; c < 3; ++c) {
    float* dst = &out[base + plane * c];
    for (size_t i = 0; i < plane; ++i) dst[i] = table[c][image.rgb[i * 3 + c]];
  }
}

}  // namespace xlacel::images
