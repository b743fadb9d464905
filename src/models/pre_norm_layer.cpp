#include "models/decoder_layer.h"

namespace xlacel::models {

void add_input_norm(DecoderWeights& weights, int64_t l) {
  weights.add_layer_norm(l, "input_norm", "input_layernorm.weight", "attn_norm.weight",
                         weights.config().hidden_size);
}

void add_post_norm(DecoderWeights& weights, int64_t l, const std::string& hf,
                   const std::string& gguf) {
  weights.add_layer_norm(l, "post_norm", hf, gguf, weights.config().hidden_size);
}

void PreNormLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  add_input_norm(weights, l);
  attention_.add_weights(weights, l);
  add_post_norm(weights, l, "post_attention_layernorm.weight", post_norm_gguf_);
  feed_forward_->add_weights(weights, l);
}

Value PreNormLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  Value attn = attention_.emit(graph, l, graph.layer_norm(l, h, "input_norm"));
  h = h + graph.scaled(attn, residual_scale_);
  Value ffn = feed_forward_->emit(graph, l, graph.layer_norm(l, h, "post_norm"));
  return h + graph.scaled(ffn, residual_scale_);
}

}  // namespace xlacel::models
