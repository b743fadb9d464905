// What turns the encoder's patches into the decoder's image tokens: Idefics3Connector (pixel
// shuffle, then a linear without bias) or Gemma3MultiModalProjector (average pool, (1 + w)
// RMSNorm, projection).
#include "models/llama_layers.h"
#include "models/vision_tower.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

// Idefics3Connector.pixel_shuffle: token (h1, w1) of the (side/s) x (side/s) grid holds the s x s
// patches (h1 * s + h2, w1 * s + w2) as features [h2, w2, hidden], then the projection.
Value pixel_shuffle_projection(const VisionConfig& c, const VisionWeights& w, Value encoded,
                               int64_t images) {
  const int64_t s = c.scale_factor;
  const int64_t side = c.patches_per_side() / s;
  Value x = reshape(encoded, {images, side, s, side, s, c.hidden_size});
  x = reshape(transpose(x, {0, 1, 3, 2, 4, 5}), {images * side * side, s * s * c.hidden_size});
  return reshape(linear(x, w.at("mm_proj")), {images, side * side, c.text_hidden_size});
}

// Gemma3MultiModalProjector: AvgPool2d over k x k patches (k = patches per side / tokens per
// side), token (h1, w1) in row-major order, RMSNorm with (1 + w), then x @ W (W [hidden, text]).
Value avg_pool_projection(const VisionConfig& c, const VisionWeights& w, Value encoded,
                          int64_t images) {
  const int64_t side = c.patches_per_side();
  int64_t tokens_side = 1;
  while (tokens_side * tokens_side < c.mm_tokens_per_image) ++tokens_side;
  const int64_t k = side / tokens_side;
  Value x = reshape(encoded, {images, tokens_side, k, tokens_side, k, c.hidden_size});
  Value pooled = reduce_sum(x, {2, 4});
  pooled = pooled / constant(x.block(), pooled.type(), static_cast<double>(k * k));
  const int64_t tokens = tokens_side * tokens_side;
  pooled = reshape(pooled, {images * tokens, c.hidden_size});
  Value norm_weight = to_f32(w.at("mm_soft_emb_norm"));
  norm_weight = norm_weight + constant(x.block(), norm_weight.type(), 1.0);
  Value normed = rms_norm(pooled, norm_weight, c.projector_norm_eps);
  Value projected = linear(normed, transpose(w.at("mm_input_projection"), {1, 0}));
  return reshape(projected, {images, tokens, c.text_hidden_size});
}

}  // namespace

void add_projector_weights(std::vector<WeightSpec>& specs, const VisionConfig& c,
                           ElementType element) {
  if (c.projector == VisionProjector::kIdefics3PixelShuffle) {
    const int64_t s = c.scale_factor;
    specs.push_back(vision_weight("mm_proj", "model.connector.modality_projection.proj.weight",
                                  "mm.model.fc.weight", {c.text_hidden_size, c.hidden_size * s * s},
                                  element));
    return;
  }
  // llama.cpp's converter stores the norm weight plus 1; transformers loads it as stored in HF.
  WeightSpec norm =
      vision_weight("mm_soft_emb_norm", "multi_modal_projector.mm_soft_emb_norm.weight",
                    "mm.soft_emb_norm.weight", {c.hidden_size}, element);
  norm.gguf_add = -1.0f;
  specs.push_back(norm);
  specs.push_back(
      vision_weight("mm_input_projection", "multi_modal_projector.mm_input_projection_weight",
                    "mm.input_projection.weight", {c.hidden_size, c.text_hidden_size}, element));
}

Value emit_projector(const VisionConfig& c, const VisionWeights& w, Value encoded, int64_t images) {
  if (c.projector == VisionProjector::kIdefics3PixelShuffle) {
    return pixel_shuffle_projection(c, w, encoded, images);
  }
  return avg_pool_projection(c, w, encoded, images);
}

}  // namespace xlacel::models
