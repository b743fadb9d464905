#include "models/decoder_layer.h"

namespace xlacel::models {

void ParallelLayer::add_weights(DecoderWeights& weights, int64_t l) const {
  add_input_norm(weights, l);
  attention_.add_weights(weights, l);
  feed_forward_->add_weights(weights, l);
}

Value ParallelLayer::emit(DecoderGraph& graph, int64_t l, Value h) const {
  Value x = graph.layer_norm(l, h, "input_norm");
  h = h + attention_.emit(graph, l, x);
  return h + feed_forward_->emit(graph, l, x);
}

}  // namespace xlacel::models
