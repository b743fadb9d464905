// The SigLIP-style encoder of both vision families: patch and position embeddings, the encoder
// layers and post_layernorm (SiglipVisionModel, Idefics3VisionTransformer).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/llama_layers.h"
#include "models/vision_tower.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

// Where the published checkpoints keep the encoder's tensors.
std::string hf_prefix(const VisionConfig& c) {
  return c.projector == VisionProjector::kGemma3AvgPool ? "vision_tower.vision_model."
                                                        : "model.vision_model.";
}

std::string layer_name(int64_t layer, const char* name) {
  return fmt::format("v{}_{}", layer, name);
}

// A LayerNorm's weight and bias: <name> and <name>_bias.
void add_layer_norm(std::vector<WeightSpec>& specs, const std::string& name,
                    const std::string& hf_name, const std::string& gguf_name, int64_t width,
                    ElementType element) {
  specs.push_back(
      vision_weight(name, hf_name + ".weight", gguf_name + ".weight", {width}, element));
  specs.push_back(
      vision_weight(name + "_bias", hf_name + ".bias", gguf_name + ".bias", {width}, element));
}

// A linear layer's weight [out, in] and bias [out]: <name> and <name>_bias.
void add_linear(std::vector<WeightSpec>& specs, const std::string& name, const std::string& hf_name,
                const std::string& gguf_name, int64_t out, int64_t in, ElementType element) {
  specs.push_back(
      vision_weight(name, hf_name + ".weight", gguf_name + ".weight", {out, in}, element));
  specs.push_back(
      vision_weight(name + "_bias", hf_name + ".bias", gguf_name + ".bias", {out}, element));
}

// The residual stream x is materialised first (an optimization barrier): IREE 3.13 otherwise fuses
// what computes it into the norm's reductions and, over a whole image's rows (1024 at SmolVLM's
// size), holds 120 KiB of that dispatch on the stack, over its 32 KiB limit.
Value layer_norm_of(const VisionWeights& w, const std::string& name, Value x, double eps) {
  return layer_norm(optimization_barrier(x), w.at(name), w.at(name + "_bias"), eps);
}

Value linear_of(const VisionWeights& w, const std::string& name, Value x) {
  return linear(x, w.at(name), w.at(name + "_bias"));
}

// Bidirectional multi-head attention over each image's patches, as eager_attention_forward:
// softmax(q k^T * head_dim^-0.5) v, then out_proj. x f32 [images * patches, hidden].
Value self_attention(const VisionConfig& c, const VisionWeights& w, int64_t l, Value x) {
  const int64_t patches = c.patches();
  const int64_t images = x.shape()[0] / patches;
  auto heads = [&](const char* name) {
    return reshape(linear_of(w, layer_name(l, name), x),
                   {images, patches, c.num_heads, c.head_dim()});
  };
  Value q = heads("q");
  Value k = heads("k");
  Value v = heads("v");
  const DotOptions highest{.precision = {{Precision::kHighest, Precision::kHighest}}};
  // [images, heads, queries, keys]
  Value scores = dot_general(q, k,
                             {.lhs_batching = {0, 2},
                              .rhs_batching = {0, 2},
                              .lhs_contracting = {3},
                              .rhs_contracting = {3}},
                             highest);
  Block& b = x.block();
  scores = scores * constant(b, scores.type(), std::pow(static_cast<double>(c.head_dim()), -0.5));
  const std::vector<int64_t>& shape = scores.shape();
  Value shifted = scores - broadcast_in_dim(reduce_max(scores, {3}), shape, {0, 1, 2});
  Value e = exponential(shifted);
  Value probabilities = e / broadcast_in_dim(reduce_sum(e, {3}), shape, {0, 1, 2});
  // [images, heads, queries, head_dim]
  Value attended = dot_general(probabilities, v,
                               {.lhs_batching = {0, 1},
                                .rhs_batching = {0, 2},
                                .lhs_contracting = {3},
                                .rhs_contracting = {1}},
                               highest);
  attended = reshape(transpose(attended, {0, 2, 1, 3}), {images * patches, c.hidden_size});
  return linear_of(w, layer_name(l, "out"), attended);
}

Value encoder_layer(const VisionConfig& c, const VisionWeights& w, int64_t l, Value x) {
  x = x + self_attention(c, w, l, layer_norm_of(w, layer_name(l, "ln1"), x, c.layer_norm_eps));
  Value h = layer_norm_of(w, layer_name(l, "ln2"), x, c.layer_norm_eps);
  return x + linear_of(w, layer_name(l, "fc2"),
                       activate(linear_of(w, layer_name(l, "fc1"), h), Activation::kGeluTanh));
}

// The patch embedding: pixels f32 [images, C, S, S] -> f32 [images * patches, hidden], patch
// h * side + w from the C x p x p pixels under it, in the conv weight's [D, C, p, p] order.
Value patch_embedding(const VisionConfig& c, const VisionWeights& w, Value pixels) {
  const int64_t images = pixels.shape()[0];
  const int64_t side = c.patches_per_side();
  const int64_t p = c.patch_size;
  const int64_t inputs = c.num_channels * p * p;
  Value x = reshape(pixels, {images, c.num_channels, side, p, side, p});
  x = reshape(transpose(x, {0, 2, 4, 1, 3, 5}), {images * side * side, inputs});
  return linear(x, reshape(w.at("v_patch_embd"), {c.hidden_size, inputs}),
                w.at("v_patch_embd_bias"));
}

// Each patch's position embedding, [patches, hidden] in f32.
Value position_embeddings(const VisionConfig& c, const VisionWeights& w) {
  Value table = to_f32(w.at("v_position_embd"));
  if (c.projector == VisionProjector::kGemma3AvgPool) return table;
  const std::vector<int64_t> ids = idefics3_position_ids(c.patches_per_side());
  std::vector<int64_t> identity(ids.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (ids == identity) return table;
  Value indices = constant(table.block(),
                           TensorType(ElementType::kI32, {static_cast<int64_t>(ids.size())}), ids);
  return take(table, indices);
}

}  // namespace

std::vector<int64_t> idefics3_position_ids(int64_t n) {
  // torch.arange(1 / n, 1.0, 1 / n) in f32, as its CPU kernel computes it: ceil((end - start) /
  // step) values; runs of 16 as two vectors of 8, each from a base f32(start + step * k) then
  // f32(base + j * step) in double, and the rest one by one, f32(start + step * k). (Checked
  // against torch for n up to 300, with every ATEN_CPU_CAPABILITY.)
  const double start = 1.0 / static_cast<double>(n);
  const auto count = static_cast<int64_t>(std::ceil((1.0 - start) / start));
  std::vector<float> boundaries;
  int64_t k = 0;
  for (; k + 16 <= count; k += 16) {
    for (const int64_t first : {k, k + 8}) {
      const auto base = static_cast<float>(start + start * static_cast<double>(first));
      for (int64_t j = 0; j < 8; ++j) {
        boundaries.push_back(static_cast<float>(double{base} + static_cast<double>(j) * start));
      }
    }
  }
  for (; k < count; ++k) {
    boundaries.push_back(static_cast<float>(start + start * static_cast<double>(k)));
  }
  // 1.0 / nb_patches (an integer tensor) in f32, each coordinate f32(i) * step, clamped below 1.
  const float step = 1.0f / static_cast<float>(n);
  const auto limit = static_cast<float>(1.0 - 1e-6);
  std::vector<int64_t> buckets;
  for (int64_t i = 0; i < n; ++i) {
    const float coordinate = std::min(static_cast<float>(i) * step, limit);
    buckets.push_back(std::upper_bound(boundaries.begin(), boundaries.end(), coordinate) -
                      boundaries.begin());
  }
  std::vector<int64_t> ids;
  for (int64_t h : buckets) {
    for (int64_t w : buckets) ids.push_back(h * n + w);
  }
  return ids;
}

void add_encoder_weights(std::vector<WeightSpec>& specs, const VisionConfig& c,
                         ElementType element) {
  const std::string hf = hf_prefix(c);
  const int64_t d = c.hidden_size;
  specs.push_back(vision_weight("v_patch_embd", hf + "embeddings.patch_embedding.weight",
                                "v.patch_embd.weight",
                                {d, c.num_channels, c.patch_size, c.patch_size}, element));
  specs.push_back(vision_weight("v_patch_embd_bias", hf + "embeddings.patch_embedding.bias",
                                "v.patch_embd.bias", {d}, element));
  specs.push_back(vision_weight("v_position_embd", hf + "embeddings.position_embedding.weight",
                                "v.position_embd.weight", {c.patches(), d}, element));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string hf_layer = fmt::format("{}encoder.layers.{}.", hf, l);
    const std::string gguf_layer = fmt::format("v.blk.{}.", l);
    add_layer_norm(specs, layer_name(l, "ln1"), hf_layer + "layer_norm1", gguf_layer + "ln1", d,
                   element);
    for (const auto& [name, gguf] :
         {std::pair{"q", "attn_q"}, {"k", "attn_k"}, {"v", "attn_v"}, {"out", "attn_out"}}) {
      add_linear(specs, layer_name(l, name), fmt::format("{}self_attn.{}_proj", hf_layer, name),
                 gguf_layer + gguf, d, d, element);
    }
    add_layer_norm(specs, layer_name(l, "ln2"), hf_layer + "layer_norm2", gguf_layer + "ln2", d,
                   element);
    // llama.cpp's mmproj names fc1 ffn_up and fc2 ffn_down (V_ENC_FFN_UP / _DOWN).
    add_linear(specs, layer_name(l, "fc1"), hf_layer + "mlp.fc1", gguf_layer + "ffn_up",
               c.intermediate_size, d, element);
    add_linear(specs, layer_name(l, "fc2"), hf_layer + "mlp.fc2", gguf_layer + "ffn_down", d,
               c.intermediate_size, element);
  }
  add_layer_norm(specs, "v_post_ln", hf + "post_layernorm", "v.post_ln", d, element);
}

Value emit_encoder(const VisionConfig& c, const VisionWeights& w, Value pixel_values) {
  const int64_t images = pixel_values.shape()[0];
  const int64_t patches = c.patches();
  Value x = reshape(patch_embedding(c, w, pixel_values), {images, patches, c.hidden_size});
  x = x + broadcast_in_dim(position_embeddings(c, w), x.shape(), {1, 2});
  x = reshape(x, {images * patches, c.hidden_size});
  for (int64_t l = 0; l < c.num_layers; ++l) x = encoder_layer(c, w, l, x);
  return layer_norm_of(w, "v_post_ln", x, c.layer_norm_eps);
}

}  // namespace xlacel::models
