#include "model_files/vision_config.h"

#include <algorithm>
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
// Qwen2_5_VLVisionConfig (depth, num_heads; no image_size: any), out_hidden_size, image_token_id.
constexpr Defaults kQwen2_5Vl{3584, 3420, 32, 16, 0, 14, 3584, 151655};

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
  std::vector<int64_t> non_negatives(const char* key, std::vector<int64_t> fallback) const {
    if (!has(key)) return fallback;
    const Json& value = object_[key];
    auto bad = [](const Json& x) { return !x.is_number_integer() || x.get<int64_t>() < 0; };
    if (!value.is_array() || std::any_of(value.begin(), value.end(), bad)) {
      fail(where_, "{}{} must be an array of non-negative integers", prefix_, key);
    }
    return value.get<std::vector<int64_t>>();
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
  if (per_grid()) {
    throw Error(
        fmt::format("{}: an image's tokens depend on its grid (tokens_for_grid), not a fixed count",
                    model_type));
  }
  if (projector == VisionProjector::kGemma3AvgPool) return mm_tokens_per_image;
  return patches() / (scale_factor * scale_factor);
}

void VisionConfig::check_grid(const VisionGrid& grid) const {
  const int64_t m = spatial_merge_size;
  if (grid.t < 1 || grid.h < 1 || grid.w < 1 || grid.h % m != 0 || grid.w % m != 0) {
    throw Error(fmt::format(
        "{}: image grid {}x{}x{} (t, h, w in patches) must be positive, h and w multiples of "
        "spatial_merge_size {}",
        model_type, grid.t, grid.h, grid.w, m));
  }
}

int64_t VisionConfig::tokens_for_grid(const VisionGrid& grid) const {
  if (!per_grid()) return tokens_per_image();
  check_grid(grid);
  return grid.patches() / (spatial_merge_size * spatial_merge_size);
}

namespace {

// Qwen2.5-VL's vision_config (Qwen2_5_VLVisionConfig) and the outer config's token ids; the
// decoder's width is the merger's out_hidden_size, which a text_config's (or a flat config's)
// hidden_size must equal.
VisionConfig read_qwen2_5_vl(const Json& config_json, const Fields& outer, const Fields& vision,
                             std::string_view where) {
  const Defaults& d = kQwen2_5Vl;
  VisionConfig c;
  c.model_type = "qwen2_5_vl";
  c.projector = VisionProjector::kQwen2VlMerger;
  c.hidden_size = vision.positive("hidden_size", d.hidden_size);
  c.intermediate_size = vision.positive("intermediate_size", d.intermediate_size);
  c.num_layers = vision.positive("depth", d.num_layers);
  c.num_heads = vision.positive("num_heads", d.num_heads);
  c.num_channels = vision.positive(vision.has("in_channels") ? "in_channels" : "in_chans", 3);
  c.image_size = 0;
  c.patch_size = vision.positive("patch_size", d.patch_size);
  c.temporal_patch_size = vision.positive("temporal_patch_size", 2);
  c.spatial_merge_size = vision.positive("spatial_merge_size", 2);
  c.window_size = vision.positive("window_size", 112);
  c.fullatt_block_indexes = vision.non_negatives("fullatt_block_indexes", {7, 15, 23, 31});
  c.hidden_act = vision.text("hidden_act", "silu");
  c.layer_norm_eps = 1e-6;
  c.text_hidden_size = vision.positive("out_hidden_size", d.text_hidden_size);
  const Json& vision_json = config_json["vision_config"];
  if (vision_json.contains("rope_parameters") && vision_json["rope_parameters"].is_object()) {
    c.rope_theta = Fields(vision_json["rope_parameters"], where, "vision_config.rope_parameters.")
                       .positive_number("rope_theta", 10000);
  }
  if (c.hidden_act != "silu") {
    vision.fail_key("hidden_act", "'{}' is not supported (silu is)", c.hidden_act);
  }
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 4 != 0) {
    vision.fail_key("num_heads", "({}) must divide hidden_size ({}) into heads of a multiple of 4",
                    c.num_heads, c.hidden_size);
  }
  if (c.window_size / c.spatial_merge_size / c.patch_size < 1) {
    vision.fail_key("window_size", "({}) must hold patch_size x spatial_merge_size ({} x {})",
                    c.window_size, c.patch_size, c.spatial_merge_size);
  }
  for (int64_t block : c.fullatt_block_indexes) {
    if (block >= c.num_layers) {
      vision.fail_key("fullatt_block_indexes", "names block {} of a depth of {}", block,
                      c.num_layers);
    }
  }
  const bool nested = config_json.contains("text_config") && config_json["text_config"].is_object();
  const Fields text = nested ? Fields(config_json["text_config"], where, "text_config.") : outer;
  if (text.has("hidden_size") && text.positive("hidden_size", 0) != c.text_hidden_size) {
    vision.fail_key("out_hidden_size", "({}) must be the decoder's hidden_size ({})",
                    c.text_hidden_size, text.positive("hidden_size", 0));
  }
  c.image_token_id = outer.non_negative("image_token_id", d.image_token_id);
  c.video_token_id = outer.non_negative("video_token_id", 151656);
  c.vision_start_token_id = outer.non_negative("vision_start_token_id", 151652);
  c.vision_end_token_id = outer.non_negative("vision_end_token_id", 151653);
  return c;
}

}  // namespace

std::optional<VisionConfig> read_vision_config(const Json& config_json, std::string_view where) {
  if (!config_json.is_object() || !config_json.contains("vision_config")) return std::nullopt;
  const Json& vision_json = config_json["vision_config"];
  if (!vision_json.is_object()) fail(where, "vision_config must be an object");
  const Fields outer(config_json, where, "");
  const Fields vision(vision_json, where, "vision_config.");

  VisionConfig c;
  c.model_type = outer.text("model_type", "");
  if (c.model_type == "qwen2_5_vl") return read_qwen2_5_vl(config_json, outer, vision, where);
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

namespace {

// An mmproj file's clip.* keys, errors naming the file and the key.
class ClipKeys {
 public:
  explicit ClipKeys(const GgufFile& file) : file_(file) {}

  int64_t positive(const std::string& key) const {
    const int64_t value = file_.get_int(key);
    if (value < 1) fail(file_.path(), "metadata '{}' must be at least 1 (got {})", key, value);
    return value;
  }
  int64_t positive(const std::string& key, int64_t fallback) const {
    return file_.has(key) ? positive(key) : fallback;
  }
  double positive_number(const std::string& key, double fallback) const {
    if (!file_.has(key)) return fallback;
    const double value = file_.get_float(key);
    if (!(value > 0)) fail(file_.path(), "metadata '{}' must be positive (got {})", key, value);
    return value;
  }
  template <typename... Args>
  [[noreturn]] void fail_key(const std::string& key, fmt::format_string<Args...> format,
                             Args&&... args) const {
    fail(file_.path(), "metadata '{}' {}", key, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const GgufFile& file_;
};

// The text GGUF's id of the token `text`.
int64_t token_id(const GgufFile& text, const std::string& token) {
  const char* key = "tokenizer.ggml.tokens";
  if (!text.has(key)) {
    fail(text.path(), "has no vocabulary ({}), so no image token '{}' for the mmproj's images", key,
         token);
  }
  const std::vector<std::string> tokens = text.get_string_array(key);
  const auto found = std::find(tokens.begin(), tokens.end(), token);
  if (found == tokens.end()) {
    fail(text.path(), "the vocabulary has no image token '{}' (the mmproj's projector needs it)",
         token);
  }
  return found - tokens.begin();
}

std::vector<double> triple(const GgufFile& file, const std::string& key) {
  std::vector<double> values = file.get_float_array(key);
  if (values.size() != 3) fail(file.path(), "metadata '{}' must hold 3 numbers", key);
  return values;
}

}  // namespace

VisionConfig read_vision_config_from_gguf(const GgufFile& mmproj, const GgufFile& text) {
  const std::string architecture =
      mmproj.has("general.architecture") ? mmproj.get_string("general.architecture") : "";
  if (architecture != "clip") {
    fail(mmproj.path(), "general.architecture is '{}': not llama.cpp's image encoder (mmproj) file",
         architecture);
  }
  if (mmproj.has("clip.has_vision_encoder") && !mmproj.get_bool("clip.has_vision_encoder")) {
    fail(mmproj.path(), "has no vision encoder (clip.has_vision_encoder false)");
  }
  const std::string type_key = mmproj.has("clip.vision.projector_type")
                                   ? "clip.vision.projector_type"
                                   : "clip.projector_type";
  const std::string type = mmproj.get_string(type_key);
  const bool gemma3 = type == "gemma3";
  if (!gemma3 && type != "idefics3") {
    fail(mmproj.path(),
         "metadata '{}' is '{}': xlacel runs the projectors idefics3 and gemma3 only", type_key,
         type);
  }
  const ClipKeys clip(mmproj);
  VisionConfig c;
  c.model_type = type;
  c.projector = gemma3 ? VisionProjector::kGemma3AvgPool : VisionProjector::kIdefics3PixelShuffle;
  c.hidden_size = clip.positive("clip.vision.embedding_length");
  c.intermediate_size = clip.positive("clip.vision.feed_forward_length");
  c.num_layers = clip.positive("clip.vision.block_count");
  c.num_heads = clip.positive("clip.vision.attention.head_count");
  c.image_size = clip.positive("clip.vision.image_size");
  c.patch_size = clip.positive("clip.vision.patch_size");
  c.layer_norm_eps = clip.positive_number("clip.vision.attention.layer_norm_epsilon", 1e-6);
  c.text_hidden_size = clip.positive("clip.vision.projection_dim");
  if (!mmproj.has("clip.use_gelu") || !mmproj.get_bool("clip.use_gelu")) {
    clip.fail_key("clip.use_gelu", "must be true (the encoder xlacel runs is gelu's)");
  }
  if (auto patch = mmproj.find_tensor("v.patch_embd.weight"); patch && patch->shape.size() == 4) {
    c.num_channels = patch->shape[1];
  }
  if (c.hidden_size % c.num_heads != 0) {
    clip.fail_key("clip.vision.attention.head_count", "({}) must divide embedding_length ({})",
                  c.num_heads, c.hidden_size);
  }
  if (c.image_size % c.patch_size != 0) {
    clip.fail_key("clip.vision.patch_size", "({}) must divide image_size ({})", c.patch_size,
                  c.image_size);
  }
  const char* scale_key = "clip.vision.projector.scale_factor";
  const int64_t scale = clip.positive(scale_key, gemma3 ? 4 : 1);
  const int64_t side = c.patches_per_side();
  if (side % scale != 0) {
    clip.fail_key(scale_key, "({}) must divide the {} patches per side", scale, side);
  }
  if (gemma3) {
    c.mm_tokens_per_image = (side / scale) * (side / scale);
    c.projector_norm_eps = c.layer_norm_eps;
  } else {
    c.scale_factor = scale;
  }
  c.image_token_id = token_id(text, gemma3 ? "<image_soft_token>" : "<image>");
  return c;
}

Json preprocessor_config_from_gguf(const GgufFile& mmproj, const VisionConfig& vision) {
  Json config = Json::object();
  config["image_mean"] = triple(mmproj, "clip.vision.image_mean");
  config["image_std"] = triple(mmproj, "clip.vision.image_std");
  if (vision.projector == VisionProjector::kGemma3AvgPool) {
    config["image_processor_type"] = "Gemma3ImageProcessor";
    config["size"] = {{"height", vision.image_size}, {"width", vision.image_size}};
    config["image_seq_length"] = vision.mm_tokens_per_image;
    return config;
  }
  config["image_processor_type"] = "Idefics3ImageProcessor";
  config["max_image_size"] = {{"longest_edge", vision.image_size}};
  config["size"] = {{"longest_edge", ClipKeys(mmproj).positive("clip.vision.preproc_image_size",
                                                               4 * vision.image_size)}};
  return config;
}

}  // namespace xlacel
