#include "model_files/vision_config.h"

#include <cmath>

#include "common/error.h"

namespace xlacel {

namespace {

// Defaults of transformers' config classes for the keys a config.json may leave out.
struct Defaults {
  int64_t hidden_size, intermediate_size, num_layers, num_heads, image_size, patch_size;
  int64_t text_hidden_size, image_token_id;
};
// Idefics3VisionConfig / SmolVLMVisionConfig, their text_config's LlamaConfig, image_token_id.
constexpr Defaults kIdefics3{1152, 3072, 12, 16, 224, 32, 4096, 128257};
// SiglipVisionConfig, Gemma3TextConfig, image_token_index.
constexpr Defaults kGemma3{768, 3072, 12, 12, 224, 16, 2304, 262144};

// A JSON object's keys read with a default, errors naming "<prefix><key>".
class Fields {
 public:
  Fields(const Json& object, std::string_view where, std::string prefix)
      : object_(object), where_(where), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return object_.contains(key) && !object_[key].is_null(); }

  int64_t positive(const char* key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const Json& value = object_[key];
    if (!value.is_number_integer()) fail(where_, "{}{} must be an integer", prefix_, key);
    const auto result = value.get<int64_t>();
    if (result < 1) fail(where_, "{}{} must be at least 1 (got {})", prefix_, key, result);
    return result;
  }
  int64_t non_negative(const char* key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const Json& value = object_[key];
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      fail(where_, "{}{} must be a non-negative integer", prefix_, key);
    }
    return value.get<int64_t>();
  }
  double positive_number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const Json& value = object_[key];
    if (!value.is_number() || !(value.get<double>() > 0)) {
      fail(where_, "{}{} must be a positive number", prefix_, key);
    }
    return value.get<double>();
  }
  std::string text(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!object_[key].is_string()) fail(where_, "{}{} must be a string", prefix_, key);
    return object_[key].get<std::string>();
  }

  template <typename... Args>
  [[noreturn]] void fail_key(const char* key, fmt::format_string<Args...> format,
                             Args&&... args) const {
    fail(where_, "{}{} {}", prefix_, key, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const Json& object_;
  std::string_view where_;
  std::string prefix_;
};

}  // namespace

int64_t VisionConfig::tokens_per_image() const {
  if (projector == VisionProjector::kGemma3AvgPool) return mm_tokens_per_image;
  return patches() / (scale_factor * scale_factor);
}

std::optional<VisionConfig> read_vision_config(const Json& config_json, std::string_view where) {
  if (!config_json.is_object() || !config_json.contains("vision_config")) return std::nullopt;
  const Json& vision_json = config_json["vision_config"];
  if (!vision_json.is_object()) fail(where, "vision_config must be an object");
  const Fields outer(config_json, where, "");
  const Fields vision(vision_json, where, "vision_config.");

  VisionConfig c;
  c.model_type = outer.text("model_type", "");
  const bool gemma3 = c.model_type == "gemma3";
  if (!gemma3 && c.model_type != "idefics3" && c.model_type != "smolvlm") {
    fail(where,
         "model_type '{}' has a vision_config, but xlacel runs the vision towers of "
         "idefics3, smolvlm and gemma3 only",
         c.model_type);
  }
  const Defaults& d = gemma3 ? kGemma3 : kIdefics3;
  c.projector = gemma3 ? VisionProjector::kGemma3AvgPool : VisionProjector::kIdefics3PixelShuffle;
  c.hidden_size = vision.positive("hidden_size", d.hidden_size);
  c.intermediate_size = vision.positive("intermediate_size", d.intermediate_size);
  c.num_layers = vision.positive("num_hidden_layers", d.num_layers);
  c.num_heads = vision.positive("num_attention_heads", d.num_heads);
  c.num_channels = vision.positive("num_channels", 3);
  c.image_size = vision.positive("image_size", d.image_size);
  c.patch_size = vision.positive("patch_size", d.patch_size);
  c.layer_norm_eps = vision.positive_number("layer_norm_eps", 1e-6);
  c.hidden_act = vision.text("hidden_act", "gelu_pytorch_tanh");
  if (c.hidden_act != "gelu_pytorch_tanh") {
    vision.fail_key("hidden_act", "'{}' is not supported (gelu_pytorch_tanh is)", c.hidden_act);
  }
  if (c.hidden_size % c.num_heads != 0) {
    vision.fail_key("num_attention_heads", "({}) must divide hidden_size ({})", c.num_heads,
                    c.hidden_size);
  }
  if (c.image_size % c.patch_size != 0) {
    vision.fail_key("patch_size", "({}) must divide image_size ({})", c.patch_size, c.image_size);
  }

  int64_t text_hidden = d.text_hidden_size;
  if (config_json.contains("text_config") && config_json["text_config"].is_object()) {
    text_hidden = Fields(config_json["text_config"], where, "text_config.")
                      .positive("hidden_size", d.text_hidden_size);
  }
  c.text_hidden_size = text_hidden;

  const int64_t side = c.patches_per_side();
  if (gemma3) {
    const char* key = outer.has("image_token_index") ? "image_token_index" : "image_token_id";
    c.image_token_id = outer.non_negative(key, d.image_token_id);
    c.mm_tokens_per_image = outer.positive("mm_tokens_per_image", 256);
    c.projector_norm_eps = c.layer_norm_eps;
    const auto tokens_side =
        static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(c.mm_tokens_per_image))));
    if (tokens_side * tokens_side != c.mm_tokens_per_image || side % tokens_side != 0) {
      outer.fail_key("mm_tokens_per_image",
                     "({}) must be a square whose side divides the {} patches "
                     "per side",
                     c.mm_tokens_per_image, side);
    }
  } else {
    c.image_token_id = outer.non_negative("image_token_id", d.image_token_id);
    c.scale_factor = outer.positive("scale_factor", 2);
    if (side % c.scale_factor != 0) {
      outer.fail_key("scale_factor", "({}) must divide the {} patches per side", c.scale_factor,
                     side);
    }
  }
  return c;
}

}  // namespace xlacel
