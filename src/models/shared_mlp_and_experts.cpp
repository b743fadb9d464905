#include <fmt/format.h>

#include "models/feed_forward.h"

namespace xlacel::models {

void SharedMlpAndExperts::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t hidden = c.hidden_size;
  const bool experts = c.num_experts > 0;
  const int64_t shared = experts ? c.shared_expert_intermediate_size : c.intermediate_size;
  const std::string suffix = experts ? "_shexp.weight" : ".weight";
  auto shared_half = [&](const char* name, const char* gguf, int64_t half) {
    weights
        .add_layer(l, name, "shared_mlp.input_linear.weight", gguf + suffix, {shared, hidden},
                   Split::kOutputs)
        .hf_rows = {half * shared, 2 * shared};
  };
  shared_half("shared_gate_proj", "ffn_gate", 0);
  shared_half("shared_up_proj", "ffn_up", 1);
  weights.add_layer(l, "shared_down_proj", "shared_mlp.output_linear.weight", "ffn_down" + suffix,
                    {hidden, shared}, Split::kInputs);
  if (!experts) return;
  const int64_t inter = c.expert_intermediate_size, count = c.num_experts;
  weights.add_layer(l, "router", "block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight",
                    {count, hidden});
  for (int64_t x = 0; x < count; ++x) {
    auto expert = [&](const char* name, const char* hf, const char* gguf, int64_t rows,
                      int64_t columns, WeightSpec::FileRows hf_rows, Split split) {
      WeightSpec& spec = weights.add_layer(l, fmt::format("e{}_{}", x, name),
                                           fmt::format("block_sparse_moe.{}.weight", hf), gguf,
                                           {rows, columns}, split);
      spec.hf_rows = hf_rows;
      spec.gguf_rows = {x * rows, count * rows};
      spec.expert = true;
    };
    expert("gate_proj", "input_linear", "ffn_gate_exps.weight", inter, hidden,
           {2 * x * inter, 2 * count * inter}, Split::kOutputs);
    expert("up_proj", "input_linear", "ffn_up_exps.weight", inter, hidden,
           {(2 * x + 1) * inter, 2 * count * inter}, Split::kOutputs);
    expert("down_proj", "output_linear", "ffn_down_exps.weight", hidden, inter,
           {x * hidden, count * hidden}, Split::kInputs);
  }
}

Value SharedMlpAndExperts::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  Value shared =
      mlp(x, graph.layer_matrix(l, "shared_gate_proj"), graph.layer_matrix(l, "shared_up_proj"),
          graph.layer_matrix(l, "shared_down_proj"), Activation::kSilu);
  if (c.num_experts == 0) return shared;
  Value experts = mixture_of_experts(
      x, graph.layer_matrix(l, "router"), layer_experts(graph, l, false),
      {.top_k = c.experts_per_token, .softmax_of_chosen = true}, {.activation = Activation::kSilu});
  return experts + shared;
}

}  // namespace xlacel::models
