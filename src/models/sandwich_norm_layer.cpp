#include "models/decoder_layer.h"

namespace xlacel::models {

void add_attn_out_norm(DecoderWeights& weights, int64_t l) {
  weights.add_layer_norm(l, "attn_out_norm", "post_attention_layernorm.weight",
                         "post_attention_norm.weight", weights.config().hidden_size);
}

void add_ffn_out_norm(DecoderWeights& weights, int64_t l) {
  weights.add_layer_norm(l, "ffn_out_norm", "post_feedforward_layernorm.weight",
                         "post_ffw_norm.weight", weights.config().hidden_size);
}

void SandwichNormLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  add_input_norm(weights, l);
  attention_.add_weights(weights, l);
  add_attn_out_norm(weights, l);
  add_post_norm(weights, l, "pre_feedforward_layernorm.weight");
  feed_forward_->add_weights(weights, l);
  add_ffn_out_norm(weights, l);
}

Value SandwichNormLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  Value attn = attention_.emit(graph, l, graph.layer_norm(l, h, "input_norm"));
  h = h + graph.layer_norm(l, attn, "attn_out_norm");
  Value ffn = feed_forward_->emit(graph, l, graph.layer_norm(l, h, "post_norm"));
  return h + graph.layer_norm(l, ffn, "ffn_out_norm");
}

}  // namespace xlacel::models
