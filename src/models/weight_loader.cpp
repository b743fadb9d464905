#include "models/weight_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "common/error.h"
#include "common/float16.h"
#include "models/architecture.h"
#include "models/rope_frequencies.h"

namespace xlacel::models {

namespace {

using stablehlo::ElementType;

bool gguf_permutes_qk(const ModelConfig& config) {
  // llama.cpp's converter permutes Q/K rows for the llama architecture (Mistral GGUFs are
  // "llama" too) and for Granite (its converter derives from Llama's); transformers' GGUF loader
  // reverses it for llama and mistral.
  return config.architecture == "llama" || config.architecture == "mistral" ||
         config.architecture == "granite";
}

}  // namespace

std::vector<float> reverse_permute_rows(const std::vector<float>& rows, int64_t n_head,
                                        int64_t columns) {
  const int64_t total_rows = static_cast<int64_t>(rows.size()) / columns;
  const int64_t head_rows = total_rows / n_head;
  const int64_t half = head_rows / 2;
  std::vector<float> out(rows.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t r = 0; r < 2; ++r) {
        const int64_t from = h * head_rows + 2 * i + r;
        const int64_t to = h * head_rows + r * half + i;
        std::memcpy(&out[static_cast<size_t>(to * columns)],
                    &rows[static_cast<size_t>(from * columns)],
                    static_cast<size_t>(columns) * sizeof(float));
      }
    }
  }
  return out;
}

std::vector<float> load_weight_f32(const ModelFiles& files, const WeightSpec& spec) {
  const ModelConfig& config = files.config();
  const bool gguf = files.format() == ModelFiles::Format::kGguf;
  if (spec.rope_inv_freq && spec.rope_local) {
    ModelConfig local = config;
    local.rope_theta = config.rope_local_theta;
    local.rope_scaling = config.rope_local_scaling;
    return rope_inverse_frequencies(local);
  }
  if (spec.rope_inv_freq) {
    std::vector<float> factors;
    if (config.rope_scaling.type == RopeScaling::Type::kFrequencyFactors) {
      auto tensor = files.find_tensor("rope_freqs.weight");
      if (!tensor) fail(files.path(), "tensor 'rope_freqs.weight' not found");
      factors = to_f32(*tensor);
    }
    return rope_inverse_frequencies(config, factors);
  }
  const std::string& name = gguf ? spec.gguf_name : spec.hf_name;
  auto tensor = files.find_tensor(name);
  if (!tensor) fail(files.path(), "tensor '{}' not found (for argument {})", name, spec.name);
  // A row range of a fused (or stacked) tensor: the file's tensor has source_rows rows over all
  // its dimensions but the last.
  const bool rows = spec.source_rows > 0 && (gguf || !spec.source_rows_gguf_only);
  std::vector<int64_t> file_shape = spec.shape;
  if (rows) file_shape[0] = spec.source_rows;
  std::vector<int64_t> got = tensor->shape;
  if (rows && got.size() > 2) {
    int64_t outer = 1;
    for (size_t i = 0; i + 1 < got.size(); ++i) outer *= got[i];
    got = {outer, got.back()};
  }
  if (got != file_shape) {
    fail(files.path(), "tensor '{}' has shape [{}], expected [{}]", name,
         fmt::join(tensor->shape, ", "), fmt::join(file_shape, ", "));
  }
  std::vector<float> values = to_f32(*tensor);
  if (rows) {
    const int64_t columns = spec.shape.size() > 1 ? spec.shape[1] : 1;
    const auto begin = values.begin() + static_cast<std::ptrdiff_t>(spec.source_row * columns);
    values =
        std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(spec.shape[0] * columns));
  }
  if (gguf && spec.gguf_add != 0.0f) {
    for (float& v : values) v = v + spec.gguf_add;
  }
  if (gguf && gguf_permutes_qk(config) && spec.shape.size() == 2) {
    const bool q = name.ends_with(".attn_q.weight");
    const bool k = name.ends_with(".attn_k.weight");
    if (q || k) {
      values =
          reverse_permute_rows(values, q ? config.num_heads : config.num_kv_heads, spec.shape[1]);
    }
  }
  return values;
}

HostTensor prepare_weight(const ModelFiles& files, const WeightSpec& spec) {
  std::vector<float> values = load_weight_f32(files, spec);
  HostTensor result{spec, {}};
  if (spec.element == ElementType::kF32) {
    result.bytes.resize(values.size() * sizeof(float));
    std::memcpy(result.bytes.data(), values.data(), result.bytes.size());
    return result;
  }
  std::vector<uint16_t> narrow(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    narrow[i] = spec.element == ElementType::kBF16 ? float_to_bfloat16(values[i])
                                                   : float_to_half(values[i]);
  }
  result.bytes.resize(narrow.size() * sizeof(uint16_t));
  std::memcpy(result.bytes.data(), narrow.data(), result.bytes.size());
  return result;
}

void for_each_weight(const ModelFiles& files, WeightType type,
                     const std::function<void(const HostTensor&)>& callback) {
  const Architecture& architecture = architecture_for(files.config(), files.path());
  for (const WeightSpec& spec : architecture.weight_specs(files.config(), type)) {
    callback(prepare_weight(files, spec));
  }
}

}  // namespace xlacel::models
