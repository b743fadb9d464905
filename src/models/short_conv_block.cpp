#include "models/short_conv_block.h"

#include <fmt/format.h>

#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

void ShortConvBlock::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t hidden = c.hidden_size;
  auto add = [&](const char* name, const char* part, const char* kind, std::vector<int64_t> shape) {
    weights.add_layer(l, name, fmt::format("conv.{}.{}", part, kind),
                      fmt::format("shortconv.{}.{}", part, kind), std::move(shape));
  };
  add("conv_in_proj", "in_proj", "weight", {3 * hidden, hidden});
  if (c.conv_bias) add("conv_in_bias", "in_proj", "bias", {3 * hidden});
  add("conv_weight", "conv", "weight", {hidden, c.conv_kernel});
  if (c.conv_bias) add("conv_bias", "conv", "bias", {hidden});
  add("conv_out_proj", "out_proj", "weight", {hidden, hidden});
  if (c.conv_bias) add("conv_out_bias", "out_proj", "bias", {hidden});
}

void ShortConvBlock::add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config,
                                int64_t layer, ElementType element, int64_t slots) const {
  caches.push_back({fmt::format("conv_cache_{}", layer),
                    element,
                    {slots, 1, config.conv_kernel, config.hidden_size},
                    Split::kNone});
}

Value ShortConvBlock::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  const int64_t tokens = graph.tokens(), hidden = c.hidden_size;
  Value bcx = linear(x, graph.layer_matrix(l, "conv_in_proj"),
                     graph.optional_layer_weight(l, "conv_in_bias"));  // [T, 3 * hidden]
  auto third = [&](int64_t i) { return slice(bcx, {0, i * hidden}, {tokens, (i + 1) * hidden}); };
  Value gate_in = third(0), gate_out = third(1), input = third(2);
  // [T, taps, hidden]: each row's gated inputs at its position and the taps - 1 before it.
  Value window = graph.recent_inputs(l, gate_in * input);
  Value convolved = depthwise_conv(window, graph.layer_weight(l, "conv_weight"),
                                   graph.optional_layer_weight(l, "conv_bias"));
  return linear(gate_out * convolved, graph.layer_matrix(l, "conv_out_proj"),
                graph.optional_layer_weight(l, "conv_out_bias"));
}

}  // namespace xlacel::models
