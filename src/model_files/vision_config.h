#pragma once
// A vision-language model's image encoder and projector, from config.json's vision_config and the
// outer config's projector keys, with transformers' defaults where a key is absent. Two families:
//   Idefics3 / SmolVLM (model_type idefics3, smolvlm): a SigLIP-style encoder whose position ids
//     Idefics3VisionEmbeddings bucketizes, then the connector's pixel shuffle by scale_factor and
//     a linear projection without bias (modality_projection);
//   Gemma 3 (gemma3): SiglipVisionModel, then Gemma3MultiModalProjector: the patch grid average
//     pooled to mm_tokens_per_image, a (1 + w) RMSNorm and a projection matrix.
// The graph (models/vision_tower.h) maps images [images, channels, image_size, image_size] to
// features [images, tokens_per_image(), text_hidden_size], one row per image token.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_file.h"

namespace xlacel {

enum class VisionProjector {
  kIdefics3PixelShuffle,  // Idefics3Connector: pixel shuffle, then proj (no bias)
  kGemma3AvgPool,         // Gemma3MultiModalProjector: avg pool, RMSNorm (1 + w), matmul
};

struct VisionConfig {
  VisionProjector projector = VisionProjector::kIdefics3PixelShuffle;
  std::string model_type;  // the outer config's: "idefics3", "smolvlm", "gemma3"
  // The encoder (vision_config).
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_channels = 3;
  int64_t image_size = 0;  // square images of image_size x image_size pixels
  int64_t patch_size = 0;
  double layer_norm_eps = 1e-6;
  std::string hidden_act = "gelu_pytorch_tanh";  // the only activation the graph runs
  // Idefics3 / SmolVLM: the connector's pixel shuffle merges scale_factor x scale_factor patches.
  int64_t scale_factor = 1;
  // Gemma 3: image tokens (a square number) and the projector's RMSNorm epsilon (transformers
  // uses vision_config.layer_norm_eps).
  int64_t mm_tokens_per_image = 0;
  double projector_norm_eps = 1e-6;
  // The decoder's width (text_config.hidden_size) and the token the prompt holds per feature row.
  int64_t text_hidden_size = 0;
  int64_t image_token_id = 0;

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t patches() const { return patches_per_side() * patches_per_side(); }
  int64_t head_dim() const { return hidden_size / num_heads; }
  // Feature rows (image tokens) per image: patches / scale_factor^2, or mm_tokens_per_image.
  int64_t tokens_per_image() const;
};

// The vision tower of an HF config.json, or nullopt where it has no "vision_config". Error
// "<where>: vision_config.<key> ..." (or the outer key) for a value of the wrong type or out of its
// domain, a model_type without a vision tower xlacel runs, or shapes that do not divide (patches
// per side by scale_factor, heads into hidden_size, the pooled grid).
std::optional<VisionConfig> read_vision_config(const Json& config_json, std::string_view where);

}  // namespace xlacel
