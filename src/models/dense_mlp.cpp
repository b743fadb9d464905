#include "models/feed_forward.h"

namespace xlacel::models {

void DenseMlp::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t inter = c.intermediate_size;
  weights.add_layer(l, "up_proj", "mlp.c_fc.weight", "ffn_up.weight", {inter, c.hidden_size},
                    Split::kOutputs);
  if (c.linear_bias) {
    weights.add_layer(l, "up_bias", "mlp.c_fc.bias", "ffn_up.bias", {inter}, Split::kOutputs);
  }
  weights.add_layer(l, "down_proj", "mlp.c_proj.weight", "ffn_down.weight", {c.hidden_size, inter},
                    Split::kInputs);
  if (c.linear_bias) {
    weights.add_layer(l, "down_bias", "mlp.c_proj.bias", "ffn_down.bias", {c.hidden_size});
  }
}

Value DenseMlp::emit(DecoderGraph& graph, int64_t l, Value x) const {
  return dense_mlp(x, graph.layer_matrix(l, "up_proj"), graph.optional_layer_weight(l, "up_bias"),
                   graph.layer_matrix(l, "down_proj"), graph.optional_layer_weight(l, "down_bias"),
                   activation_);
}

}  // namespace xlacel::models
