#include <fmt/format.h>

#include "models/feed_forward.h"

namespace xlacel::models {

void SparseMoe::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t inter = c.expert_intermediate_size;
  weights.add_layer(l, "router", names_.block + ".gate.weight", "ffn_gate_inp.weight",
                    {c.num_experts, c.hidden_size});
  for (int64_t x = 0; x < c.num_experts; ++x) {
    auto expert = [&](const char* name, const std::string& hf, const char* gguf,
                      std::vector<int64_t> shape, Split split) {
      WeightSpec& spec = weights.add_layer(
          l, fmt::format("e{}_{}", x, name),
          fmt::format("{}.experts.{}.{}.weight", names_.block, x, hf), gguf, shape, split);
      spec.gguf_rows = {x * shape[0], c.num_experts * shape[0]};
      spec.expert = true;
    };
    expert("gate_proj", names_.gate, "ffn_gate_exps.weight", {inter, c.hidden_size},
           Split::kOutputs);
    expert("up_proj", names_.up, "ffn_up_exps.weight", {inter, c.hidden_size}, Split::kOutputs);
    expert("down_proj", names_.down, "ffn_down_exps.weight", {c.hidden_size, inter},
           Split::kInputs);
  }
}

std::vector<Expert> layer_experts(DecoderGraph& graph, int64_t l, bool biases) {
  std::vector<Expert> experts;
  for (int64_t e = 0; e < graph.config().num_experts; ++e) {
    auto matrix = [&](const char* name) {
      return graph.layer_matrix(l, fmt::format("e{}_{}", e, name));
    };
    auto bias = [&](const char* name) -> std::optional<Value> {
      if (!biases) return std::nullopt;
      return graph.layer_weight(l, fmt::format("e{}_{}", e, name));
    };
    experts.push_back({matrix("gate_proj"), matrix("up_proj"), matrix("down_proj"),
                       bias("gate_bias"), bias("up_bias"), bias("down_bias")});
  }
  return experts;
}

Value SparseMoe::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  const std::vector<Expert> experts = layer_experts(graph, l, false);
  return mixture_of_experts(x, graph.layer_matrix(l, "router"), experts,
                            {.top_k = c.experts_per_token, .normalize = c.norm_topk_prob},
                            {.activation = activation_});
}

}  // namespace xlacel::models
