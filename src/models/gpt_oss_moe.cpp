#include <fmt/format.h>

#include "models/feed_forward.h"

namespace xlacel::models {

void GptOssMoe::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t inter = c.expert_intermediate_size, hidden = c.hidden_size;
  weights.add_layer(l, "router", "mlp.router.weight", "ffn_gate_inp.weight",
                    {c.num_experts, hidden});
  weights.add_layer(l, "router_bias", "mlp.router.bias", "ffn_gate_inp.bias", {c.num_experts});
  // HF stacks the experts too: each one's matrix of the stacked tensor (`interleaved_part` of
  // gate_up_proj's interleaved columns: 0 gate, 1 up).
  auto experts = [&](const char* name, const char* hf, const char* gguf, std::vector<int64_t> shape,
                     Split split, int64_t interleaved_part) {
    WeightSpec& spec = weights.add_layer_experts(l, name, hf, gguf, shape, split);
    spec.hf_stacked = 0;
    spec.hf_interleave = interleaved_part >= 0 ? 2 : 1;
    spec.hf_interleave_offset = std::max<int64_t>(interleaved_part, 0);
    spec.hf_transposed = shape.size() == 2;  // matrices are stored [in, out]
  };
  experts("gate_proj", "mlp.experts.gate_up_proj", "ffn_gate_exps.weight", {inter, hidden},
          Split::kOutputs, 0);
  experts("gate_bias", "mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", {inter}, Split::kNone,
          0);
  experts("up_proj", "mlp.experts.gate_up_proj", "ffn_up_exps.weight", {inter, hidden},
          Split::kOutputs, 1);
  experts("up_bias", "mlp.experts.gate_up_proj_bias", "ffn_up_exps.bias", {inter}, Split::kNone, 1);
  experts("down_proj", "mlp.experts.down_proj", "ffn_down_exps.weight", {hidden, inter},
          Split::kInputs, -1);
  experts("down_bias", "mlp.experts.down_proj_bias", "ffn_down_exps.bias", {hidden}, Split::kNone,
          -1);
}

Value GptOssMoe::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  return mixture_of_experts(x, graph.layer_matrix(l, "router"), layer_experts(graph, l, true),
                            {.top_k = c.experts_per_token,
                             .bias = graph.layer_weight(l, "router_bias"),
                             .softmax_of_chosen = true},
                            {.clamped_swiglu = std::pair{c.swiglu_alpha, c.swiglu_limit}});
}

}  // namespace xlacel::models
