#include "models/decoder_layer.h"

namespace xlacel::models {

void PostNormLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  attention_.add_weights(weights, l);
  add_attn_out_norm(weights, l);
  feed_forward_->add_weights(weights, l);
  add_ffn_out_norm(weights, l);
}

Value PostNormLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  h = h + graph.layer_norm(l, attention_.emit(graph, l, h), "attn_out_norm");
  return h + graph.layer_norm(l, feed_forward_->emit(graph, l, h), "ffn_out_norm");
}

}  // namespace xlacel::models
