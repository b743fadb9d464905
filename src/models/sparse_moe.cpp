#include <fmt/format.h>

#include "models/feed_forward.h"

namespace xlacel::models {

void SparseMoe::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t inter = c.expert_intermediate_size;
  weights.add_layer(l, "router", names_.block + ".gate.weight", "ffn_gate_inp.weight",
                    {c.num_experts, c.hidden_size});
  auto experts = [&](const char* name, const std::string& hf, const char* gguf,
                     std::vector<int64_t> shape, Split split) {
    weights.add_layer_experts(l, name, names_.block + ".experts.{}." + hf + ".weight", gguf, shape,
                              split);
  };
  experts("gate_proj", names_.gate, "ffn_gate_exps.weight", {inter, c.hidden_size},
          Split::kOutputs);
  experts("up_proj", names_.up, "ffn_up_exps.weight", {inter, c.hidden_size}, Split::kOutputs);
  experts("down_proj", names_.down, "ffn_down_exps.weight", {c.hidden_size, inter}, Split::kInputs);
}

Experts layer_experts(DecoderGraph& graph, int64_t l, bool biases) {
  auto bias = [&](const char* name) -> std::optional<Value> {
    if (!biases) return std::nullopt;
    return graph.layer_weight(l, name);
  };
  return {graph.layer_matrix(l, "gate_proj"),
          graph.layer_matrix(l, "up_proj"),
          graph.layer_matrix(l, "down_proj"),
          bias("gate_bias"),
          bias("up_bias"),
          bias("down_bias")};
}

Value SparseMoe::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  return mixture_of_experts(x, graph.layer_matrix(l, "router"), layer_experts(graph, l, false),
                            {.top_k = c.experts_per_token, .normalize = c.norm_topk_prob},
                            {.activation = activation_});
}

}  // namespace xlacel::models
