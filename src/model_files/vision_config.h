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
//   Qwen2.5-VL (qwen2_5_vl): Qwen2_5_VisionTransformerPretrainedModel, whose images have any size:
//     one graph per grid (VisionGrid, in patches) maps the processor's patches
//     [t*h*w, channels*temporal_patch_size*patch_size^2] to features [tokens_for_grid(grid),
//     text_hidden_size]: Conv3d patches, 2D rotary, window and full attention (RMSNorm, SiLU
//     gated MLP with biases), and the patch merger (spatial_merge_size^2 neighbours, GELU MLP).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_file.h"
#include "model_files/gguf_file.h"

namespace xlacel {

enum class VisionProjector {
  kIdefics3PixelShuffle,  // Idefics3Connector: pixel shuffle, then proj (no bias)
  kGemma3AvgPool,         // Gemma3MultiModalProjector: avg pool, RMSNorm (1 + w), matmul
  kQwen2VlMerger,         // Qwen2_5_VLPatchMerger: RMSNorm, merge m x m patches, Linear-GELU-Linear
};

// An image's (or video's) patch grid as Qwen2VLImageProcessor gives it (image_grid_thw): frames
// (after merging temporal_patch_size frames; 1 for an image), rows and columns of patches.
struct VisionGrid {
  int64_t t = 1;
  int64_t h = 0;
  int64_t w = 0;
  int64_t patches() const { return t * h * w; }
  bool operator==(const VisionGrid&) const = default;
};

struct VisionConfig {
  VisionProjector projector = VisionProjector::kIdefics3PixelShuffle;
  std::string model_type;  // the outer config's: "idefics3", "smolvlm", "gemma3", "qwen2_5_vl"
  // The encoder (vision_config; Qwen2.5-VL: depth, num_heads, in_chans or in_channels).
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_channels = 3;
  int64_t image_size = 0;  // square images of image_size x image_size pixels (Qwen2.5-VL: 0, any)
  int64_t patch_size = 0;
  double layer_norm_eps = 1e-6;  // Qwen2.5-VL: its RMSNorms' (1e-6, not in its config)
  // gelu_pytorch_tanh (the SigLIP encoders'), or silu (Qwen2.5-VL's gated MLP).
  std::string hidden_act = "gelu_pytorch_tanh";
  // Idefics3 / SmolVLM: the connector's pixel shuffle merges scale_factor x scale_factor patches.
  int64_t scale_factor = 1;
  // Gemma 3: image tokens (a square number) and the projector's RMSNorm epsilon (transformers
  // uses vision_config.layer_norm_eps).
  int64_t mm_tokens_per_image = 0;
  double projector_norm_eps = 1e-6;
  // Qwen2.5-VL: Conv3d patches of temporal_patch_size frames; the merger's m x m patches
  // (spatial_merge_size); windows of window_size pixels a side (window_size / (patch_size * m)
  // merged units) on the blocks not in fullatt_block_indexes; the vision rotary's theta.
  int64_t temporal_patch_size = 1;
  int64_t spatial_merge_size = 1;
  int64_t window_size = 0;
  std::vector<int64_t> fullatt_block_indexes;
  double rope_theta = 10000;
  // The decoder's width (text_config.hidden_size; Qwen2.5-VL: vision_config.out_hidden_size, the
  // merger's) and the token the prompt holds per feature row.
  int64_t text_hidden_size = 0;
  int64_t image_token_id = 0;
  // Qwen2.5-VL: the tokens around an image's (<|vision_start|>, <|vision_end|>) and a video's.
  int64_t vision_start_token_id = -1;
  int64_t vision_end_token_id = -1;
  int64_t video_token_id = -1;

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t patches() const { return patches_per_side() * patches_per_side(); }
  int64_t head_dim() const { return hidden_size / num_heads; }
  // Floats of one fixed-size image's pixel values: channels x image_size x image_size.
  int64_t pixels_per_image() const { return num_channels * image_size * image_size; }
  // Whether the graph is one image grid's (Qwen2.5-VL: emit it per VisionGrid, count tokens with
  // tokens_for_grid) rather than of fixed-size images.
  bool per_grid() const { return projector == VisionProjector::kQwen2VlMerger; }
  // Feature rows (image tokens) per image: patches / scale_factor^2, or mm_tokens_per_image.
  // Error for a per_grid() family, whose count is the grid's.
  int64_t tokens_per_image() const;
  // Feature rows (image tokens) of an image of `grid`: t * h * w / spatial_merge_size^2 for
  // Qwen2.5-VL, tokens_per_image() for the fixed-size families. Error for a grid the graph does
  // not take (check_grid).
  int64_t tokens_for_grid(const VisionGrid& grid) const;
  // Error unless `grid` is one the per-grid graph takes: positive sides, h and w multiples of
  // spatial_merge_size.
  void check_grid(const VisionGrid& grid) const;
  // Values per patch row of a per-grid graph's input: channels * temporal_patch_size * patch^2.
  int64_t patch_values() const {
    return num_channels * temporal_patch_size * patch_size * patch_size;
  }
};

// The vision tower of an HF config.json, or nullopt where it has no "vision_config". Error
// "<where>: vision_config.<key> ..." (or the outer key) for a value of the wrong type or out of its
// domain, a model_type without a vision tower xlacel runs, or shapes that do not divide (patches
// per side by scale_factor, heads into hidden_size, the pooled grid; Qwen2.5-VL: head_dim by 4,
// window_size by patch_size * spatial_merge_size, out_hidden_size against the decoder's
// hidden_size, fullatt_block_indexes within depth).
std::optional<VisionConfig> read_vision_config(const Json& config_json, std::string_view where);

// The vision tower of llama.cpp's image encoder file (mmproj; convert_hf_to_gguf.py --mmproj) for
// the text GGUF `text`: general.architecture "clip", clip.projector_type "idefics3" or "gemma3",
// the encoder's shape from clip.vision.* (image_size, patch_size, embedding_length,
// feed_forward_length, block_count, attention.head_count, attention.layer_norm_epsilon,
// projection_dim: the decoder's width), channels from v.patch_embd.weight [D, C, p, p]; the
// projector's pooling from clip.vision.projector.scale_factor with llama.cpp's defaults where it
// is absent (Idefics3: 1; Gemma 3: 4, so mm_tokens_per_image = (patches per side / 4)^2), and the
// image token from the text GGUF's vocabulary (tokenizer.ggml.tokens): "<image>" (Idefics3 /
// SmolVLM) or "<image_soft_token>" (Gemma 3). model_type is "idefics3" or "gemma3". Error naming
// the file and the key for a missing or out-of-domain value, a projector xlacel does not run, an
// encoder that is not gelu's (clip.use_gelu), or shapes that do not divide.
VisionConfig read_vision_config_from_gguf(const GgufFile& mmproj, const GgufFile& text);

// What an HF directory's preprocessor_config.json would say, from an mmproj file's keys: the
// image processor type of the projector, image_mean and image_std (clip.vision.image_mean/_std)
// and the sizes: Idefics3 / SmolVLM's tiles of max_image_size.longest_edge = image_size and
// size.longest_edge = clip.vision.preproc_image_size (absent in older files: 4 x image_size, the
// ratio of Idefics3's and SmolVLM's published settings); Gemma 3's size = image_size square,
// image_seq_length = its tokens per image. Not in the file, so the processors' defaults (as
// transformers' and llama.cpp's): resample (Lanczos for Idefics3, bilinear for Gemma 3),
// rescale_factor 1/255, do_image_splitting true (Idefics3), do_pan_and_scan false (Gemma 3).
Json preprocessor_config_from_gguf(const GgufFile& mmproj, const VisionConfig& vision);

}  // namespace xlacel
