#include "models/feed_forward.h"

namespace xlacel::models {

void GatedMlp::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t inter = c.intermediate_size;
  auto hf = [&](const std::string& matrix) { return names_.block + "." + matrix + ".weight"; };
  if (fused_gate_up_) {
    weights.add_layer_rows(l, "gate_proj", "mlp.gate_up_proj.weight", "ffn_up.weight", 0, inter,
                           2 * inter, Split::kOutputs);
    weights.add_layer_rows(l, "up_proj", "mlp.gate_up_proj.weight", "ffn_up.weight", inter, inter,
                           2 * inter, Split::kOutputs);
  } else {
    weights.add_layer(l, "gate_proj", hf(names_.gate), "ffn_gate.weight", {inter, c.hidden_size},
                      Split::kOutputs);
    weights.add_layer(l, "up_proj", hf(names_.up), "ffn_up.weight", {inter, c.hidden_size},
                      Split::kOutputs);
  }
  weights.add_layer(l, "down_proj", hf(names_.down), "ffn_down.weight", {c.hidden_size, inter},
                    Split::kInputs);
}

Value GatedMlp::emit(DecoderGraph& graph, int64_t l, Value x) const {
  return mlp(x, graph.layer_matrix(l, "gate_proj"), graph.layer_matrix(l, "up_proj"),
             graph.layer_matrix(l, "down_proj"), activation_);
}

std::shared_ptr<const FeedForward> feed_forward_for(const ModelConfig& config,
                                                    Activation activation,
                                                    std::shared_ptr<const FeedForward> dense,
                                                    MlpNames names) {
  if (config.num_experts > 0) return std::make_shared<SparseMoe>(activation, std::move(names));
  return dense;
}

std::shared_ptr<const FeedForward> gated_feed_forward(const ModelConfig& config,
                                                      Activation activation, MlpNames names) {
  return feed_forward_for(config, activation, std::make_shared<GatedMlp>(activation, false, names),
                          names);
}

}  // namespace xlacel::models
