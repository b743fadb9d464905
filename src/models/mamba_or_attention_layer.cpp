#include "models/decoder_layer.h"

namespace xlacel::models {

void MambaOrAttentionLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  add_input_norm(weights, l);
  if (weights.config().is_mamba_layer(l)) {
    mamba_.add_weights(weights, l);
  } else {
    attention_.add_weights(weights, l);
  }
  add_post_norm(weights, l, "post_attention_layernorm.weight");
  feed_forward_->add_weights(weights, l);
}

void MambaOrAttentionLayer::add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config,
                                       int64_t layer, stablehlo::ElementType element, int64_t slots,
                                       int64_t capacity) const {
  if (config.is_mamba_layer(layer)) {
    mamba_.add_caches(caches, config, layer, element, slots);
  } else {
    attention_.add_caches(caches, config, layer, element, slots, capacity);
  }
}

Value MambaOrAttentionLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  Value x = graph.layer_norm(l, h, "input_norm");
  Value mixed =
      graph.config().is_mamba_layer(l) ? mamba_.emit(graph, l, x) : attention_.emit(graph, l, x);
  h = h + graph.scaled(mixed, residual_scale_);
  Value ffn = feed_forward_->emit(graph, l, graph.layer_norm(l, h, "post_norm"));
  return h + graph.scaled(ffn, residual_scale_);
}

}  // namespace xlacel::models
