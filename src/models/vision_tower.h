#pragma once
// A vision-language model's image encoder and projector as one StableHLO graph, emitted from C++
// as the decoder graphs are (model_files/vision_config.h names the two families):
//
//   main(pixel_values f32[images, channels, image_size, image_size], <weights in spec order>)
//     -> image_features f32[images, tokens_per_image, text_hidden_size]
//
// pixel_values as the image processor gives them (rescaled and normalised); one row of features
// per image token, in the order the prompt holds the image's tokens. Every step in f32 as
// transformers computes it:
//   patch embedding (siglip_encoder.cpp): Conv2d with kernel = stride = patch_size and bias,
//     written as each patch's C x p x p values (the conv weight's [D, C, p, p] order) times the
//     weight as a [D, C*p*p] matrix; plus the position embedding: position i for patch i
//     (SiglipVisionEmbeddings), or Idefics3VisionEmbeddings' bucketized ids of a full image
//     (idefics3_position_ids);
//   encoder layers: LayerNorm, bidirectional attention with q/k/v/out biases scaled
//     head_dim^-0.5, residual, LayerNorm, fc1, gelu (tanh), fc2, residual; post_layernorm;
//   projector (vision_projector.cpp): Idefics3's pixel shuffle by scale_factor and its bias-free
//     linear, or Gemma 3's average pool to mm_tokens_per_image, (1 + w) RMSNorm and projection.
//
// Qwen2.5-VL's tower (VisionConfig::per_grid(): qwen_vision_graph.cpp) takes images of any size,
// one graph per grid (t, h, w in patches), as Qwen2_5_VisionTransformerPretrainedModel computes
// it for one image:
//
//   main(pixel_values f32[t*h*w, channels*temporal_patch_size*patch_size^2], <weights>)
//     -> image_features f32[t*h*w / spatial_merge_size^2, text_hidden_size]
//
// pixel_values as Qwen2VLImageProcessor flattens them (images/qwen2_vl_processor.h: rows in
// merge-block order, each [channel, frame, y, x]); rows of features in the order the prompt's
// image tokens take them. Conv3d patches (no bias) as a matmul; the patches reordered into
// windows (qwen_vision_windows); each block: RMSNorm, attention (fused qkv with bias, the 2D
// rotary of qwen_vision_position_ids, within each window, or within each frame on the blocks of
// fullatt_block_indexes: a block mask, as the indices are the grid's constants), proj,
// residual, RMSNorm, SiLU gated MLP with biases, residual; the merger (RMSNorm, m x m
// neighbours concatenated, Linear, GELU (erf), Linear); the windows' order undone.
//
// Weights keep the names of the published checkpoints (hf_name) and of llama.cpp's mmproj GGUF
// files (gguf_name: v.patch_embd, v.blk.N.attn_q, mm.input_projection, ...); they are read by
// weight_loader.h's prepare_weight like the decoder's.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model_files/vision_config.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"
#include "models/weight_layout.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

// Every weight argument of the vision graph, in argument order, of `weights`' element type (kAuto:
// f32, as transformers computes the tower). The same for every grid of a per_grid() family.
std::vector<WeightSpec> vision_weight_specs(const VisionConfig& config, WeightType weights);

// The graph for `images` images at a time: input pixel_values, the weights, output
// image_features (no caches). Error for a per_grid() family.
GraphSignature vision_signature(const VisionConfig& config, int64_t images);

// The graph as StableHLO text: module @xlacel_vision, public function main. Error for a
// per_grid() family.
EmittedGraph emit_vision_graph(const VisionConfig& config, int64_t images, WeightType weights);

// A per_grid() family's graph (Qwen2.5-VL) for one image of `grid`: input pixel_values
// [grid.patches(), config.patch_values()], output image_features
// [config.tokens_for_grid(grid), text_hidden_size]. Error for another family or a grid
// VisionConfig::check_grid refuses.
GraphSignature vision_signature(const VisionConfig& config, const VisionGrid& grid);
EmittedGraph emit_vision_graph(const VisionConfig& config, const VisionGrid& grid,
                               WeightType weights);

// Idefics3VisionEmbeddings' position ids for a full (unpadded) image of n x n patches: patch
// (h, w) reads row bucket(h) * n + bucket(w), bucket(i) counting the boundaries torch.arange(1/n,
// 1, 1/n) gives in f32 that are <= min(f32(i) * f32(1/n), 1 - 1e-6) (torch.bucketize, right). Not
// always i: for n = 19, patch 12 falls in bucket 11.
std::vector<int64_t> idefics3_position_ids(int64_t patches_per_side);

// --- the parts, one file each

// The graph's weights by argument name.
using VisionWeights = std::map<std::string, stablehlo::Value>;

// siglip_encoder.cpp: the encoder's weights (patch and position embeddings, layers,
// post_layernorm), and its result for the images: f32 [images * patches, hidden].
void add_encoder_weights(std::vector<WeightSpec>& specs, const VisionConfig& config,
                         stablehlo::ElementType element);
stablehlo::Value emit_encoder(const VisionConfig& config, const VisionWeights& weights,
                              stablehlo::Value pixel_values);

// vision_projector.cpp: the projector's weights, and the features of the encoder's output
// (f32 [images * patches, hidden]) for `images` images: f32 [images, tokens, text_hidden].
void add_projector_weights(std::vector<WeightSpec>& specs, const VisionConfig& config,
                           stablehlo::ElementType element);
stablehlo::Value emit_projector(const VisionConfig& config, const VisionWeights& weights,
                                stablehlo::Value encoded, int64_t images);

// qwen_vision_layout.cpp: the constants of a Qwen2.5-VL graph for `grid`, as transformers'
// vision_utils computes them. Patch i's (row, column) in the processor's merge-block order
// (get_vision_position_ids), every frame alike.
std::vector<std::pair<int64_t, int64_t>> qwen_vision_position_ids(const VisionConfig& config,
                                                                  const VisionGrid& grid);
// get_vision_window_index: the merged units (m x m patches, in the processor's order) window
// after window, frame after frame, each window's units row-major (window_index[i] is the unit
// the i-th place holds), and the windows' cumulative patch counts from 0 (cu_window_seqlens,
// empty windows dropped).
struct QwenVisionWindows {
  std::vector<int64_t> window_index;
  std::vector<int64_t> cu_window_seqlens;
};
QwenVisionWindows qwen_vision_windows(const VisionConfig& config, const VisionGrid& grid);

// qwen_vision_graph.cpp: the weights and the features of a per_grid() family (the public
// functions above dispatch there).
void add_qwen_vision_weights(std::vector<WeightSpec>& specs, const VisionConfig& config,
                             stablehlo::ElementType element);
stablehlo::Value emit_qwen_vision(const VisionConfig& config, const VisionGrid& grid,
                                  const VisionWeights& weights, stablehlo::Value pixel_values);

// A weight of the vision graph: argument `name`, `shape`, its HF and GGUF names.
WeightSpec vision_weight(std::string name, std::string hf_name, std::string gguf_name,
                         std::vector<int64_t> shape, stablehlo::ElementType element);

}  // namespace xlacel::models
