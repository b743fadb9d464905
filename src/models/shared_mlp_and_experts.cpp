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
  // HF: expert x's gate and up are row blocks 2x and 2x + 1 of input_linear, its down row block x
  // of output_linear.
  auto stacked = [&](const char* name, const char* hf, const char* gguf, int64_t rows,
                     int64_t columns, WeightSpec::FileRows hf_rows, int64_t hf_row_step,
                     Split split) {
    WeightSpec& spec = weights.add_layer_experts(
        l, name, fmt::format("block_sparse_moe.{}.weight", hf), gguf, {rows, columns}, split);
    spec.hf_rows = hf_rows;
    spec.hf_expert_row_step = hf_row_step;
  };
  stacked("gate_proj", "input_linear", "ffn_gate_exps.weight", inter, hidden,
          {0, 2 * count * inter}, 2 * inter, Split::kOutputs);
  stacked("up_proj", "input_linear", "ffn_up_exps.weight", inter, hidden,
          {inter, 2 * count * inter}, 2 * inter, Split::kOutputs);
  stacked("down_proj", "output_linear", "ffn_down_exps.weight", hidden, inter, {0, count * hidden},
          hidden, Split::kInputs);
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
