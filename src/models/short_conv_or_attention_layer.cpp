#include "models/decoder_layer.h"

namespace xlacel::models {

void ShortConvOrAttentionLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  weights.add_layer_norm(l, "input_norm", "operator_norm.weight", "attn_norm.weight",
                         c.hidden_size);
  if (c.is_conv_layer(l)) {
    conv_.add_weights(weights, l);
  } else {
    attention_.add_weights(weights, l);
  }
  add_post_norm(weights, l, "ffn_norm.weight");
  feed_forward_->add_weights(weights, l);
}

void ShortConvOrAttentionLayer::add_caches(std::vector<TensorSpec>& caches,
                                           const ModelConfig& config, int64_t layer,
                                           stablehlo::ElementType element, int64_t slots,
                                           int64_t capacity) const {
  if (config.is_conv_layer(layer)) {
    conv_.add_caches(caches, config, layer, element, slots);
  } else {
    attention_.add_caches(caches, config, layer, element, slots, capacity);
  }
}

Value ShortConvOrAttentionLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  Value x = graph.layer_norm(l, h, "input_norm");
  h = h +
      (graph.config().is_conv_layer(l) ? conv_.emit(graph, l, x) : attention_.emit(graph, l, x));
  return h + feed_forward_->emit(graph, l, graph.layer_norm(l, h, "post_norm"));
}

}  // namespace xlacel::models
