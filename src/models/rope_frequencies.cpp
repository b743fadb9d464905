#include "models/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"

namespace xlacel::models {

std::vector<float> rope_inverse_frequencies(const ModelConfig& config,
                                            std::span<const float> frequency_factors) {
  const int64_t half = config.rope_dims() / 2;
  const auto dim = static_cast<float>(config.rope_dims());
  const auto base = static_cast<float>(config.rope_theta);
  std::vector<float> inv_freq(static_cast<size_t>(half));
  const RopeScaling& s = config.rope_scaling;
  if (s.type == RopeScaling::Type::kLongRope) {
    // _compute_longrope_parameters at lengths up to the original context:
    // 1.0 / (float32(short_factor) * base ** (arange(0, dim, 2).float() / dim)), in float32. A
    // GGUF holds the factors as rope_factors_short.weight (`frequency_factors`).
    std::vector<float> factors(frequency_factors.begin(), frequency_factors.end());
    if (factors.empty()) {
      for (double f : s.short_factor) factors.push_back(static_cast<float>(f));
    }
    if (factors.size() != inv_freq.size()) {
      fail(config.architecture, "longrope short factors: {} values, expected rotary dims / 2 = {}",
           factors.size(), inv_freq.size());
    }
    for (int64_t i = 0; i < half; ++i) {
      float exponent = static_cast<float>(2 * i) / dim;
      inv_freq[static_cast<size_t>(i)] =
          1.0f / (factors[static_cast<size_t>(i)] * std::pow(base, exponent));
    }
    return inv_freq;
  }
  for (int64_t i = 0; i < half; ++i) {
    // torch: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all float32.
    float exponent = static_cast<float>(2 * i) / dim;
    inv_freq[static_cast<size_t>(i)] = 1.0f / std::pow(base, exponent);
  }
  if (s.type == RopeScaling::Type::kLlama3) {
    // _compute_llama3_parameters: float32 tensors with Python scalars promoted to float32.
    const auto factor = static_cast<float>(s.factor);
    const auto low = static_cast<float>(s.low_freq_factor);
    const double old_context = static_cast<double>(s.original_max_position_embeddings);
    const auto low_freq_wavelen = static_cast<float>(old_context / s.low_freq_factor);
    const auto high_freq_wavelen = static_cast<float>(old_context / s.high_freq_factor);
    const auto two_pi = static_cast<float>(2 * std::numbers::pi);
    const auto old_context_f = static_cast<float>(old_context);
    const auto high_minus_low = static_cast<float>(s.high_freq_factor - s.low_freq_factor);
    for (float& f : inv_freq) {
      float wavelen = two_pi / f;
      float scaled = wavelen > low_freq_wavelen ? f / factor : f;
      float smooth = (old_context_f / wavelen - low) / high_minus_low;
      float smoothed = (1.0f - smooth) * scaled / factor + smooth * scaled;
      bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
      f = medium ? smoothed : scaled;
    }
  } else if (s.type == RopeScaling::Type::kYarn) {
    // _compute_yarn_parameters: the correction range in Python doubles, the blend in float32
    // (Python scalars promoted to float32).
    const double base_d = config.rope_theta, dim_d = static_cast<double>(config.rope_dims());
    const auto original = static_cast<double>(s.original_max_position_embeddings);
    auto correction_dim = [&](double rotations) {
      return dim_d * std::log(original / (rotations * 2 * std::numbers::pi)) /
             (2 * std::log(base_d));
    };
    double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim_d - 1);
    if (low == high) high += 0.001;  // linear_ramp_factor's guard
    const auto low_f = static_cast<float>(low), span_f = static_cast<float>(high - low);
    const auto factor = static_cast<float>(s.factor);
    for (int64_t i = 0; i < half; ++i) {
      const float extrapolation = inv_freq[static_cast<size_t>(i)];
      const float pos_freq = std::pow(base, static_cast<float>(2 * i) / dim);
      const float interpolation = 1.0f / (factor * pos_freq);
      const float ramp = std::clamp((static_cast<float>(i) - low_f) / span_f, 0.0f, 1.0f);
      const float extrapolation_factor = 1.0f - ramp;
      inv_freq[static_cast<size_t>(i)] =
          interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
  } else if (s.type == RopeScaling::Type::kLinear) {
    // _compute_linear_scaling_rope_parameters: inv_freq /= factor, in float32.
    const auto factor = static_cast<float>(s.factor);
    for (float& f : inv_freq) f = f / factor;
  } else if (s.type == RopeScaling::Type::kFrequencyFactors) {
    if (frequency_factors.size() != inv_freq.size()) {
      fail(config.architecture, "rope_freqs.weight has {} values, expected head_dim/2 = {}",
           frequency_factors.size(), inv_freq.size());
    }
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = inv_freq[i] / frequency_factors[i];
  }
  return inv_freq;
}

}  // namespace xlacel::models
