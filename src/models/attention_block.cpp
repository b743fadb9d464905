#include "models/attention_block.h"

#include <fmt/format.h>

#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

void AttentionBlock::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim;
  const int64_t qkv_rows = q_dim + 2 * kv_dim;
  // One projection: its rows of the fused qkv tensor, or its own tensor; then its bias.
  auto projection = [&](const char* name, const char* hf, const char* gguf, int64_t row,
                        int64_t rows, Split split) {
    if (options_.fused_qkv) {
      weights.add_layer_rows(l, fmt::format("{}_proj", name), "self_attn.qkv_proj.weight",
                             "attn_qkv.weight", row, rows, qkv_rows, split);
    } else {
      weights.add_layer(l, fmt::format("{}_proj", name), fmt::format("self_attn.{}.weight", hf),
                        gguf, {rows, c.hidden_size}, split);
    }
  };
  auto bias = [&](const char* name, const char* hf, const char* gguf, int64_t rows, Split split) {
    if (c.attention_bias) {
      weights.add_layer(l, fmt::format("{}_bias", name), fmt::format("self_attn.{}.bias", hf), gguf,
                        {rows}, split);
    }
  };
  projection("q", "q_proj", "attn_q.weight", 0, q_dim, Split::kOutputs);
  bias("q", "q_proj", "attn_q.bias", q_dim, Split::kOutputs);
  projection("k", "k_proj", "attn_k.weight", q_dim, kv_dim, Split::kKvOutputs);
  bias("k", "k_proj", "attn_k.bias", kv_dim, Split::kKvOutputs);
  if (options_.qk_norm != QkNorm::kNone) {
    const bool per_head = options_.qk_norm == QkNorm::kPerHead;
    const AttentionNames& n = options_.names;
    weights.add_layer_qk_norm(l, "q_norm", fmt::format("self_attn.{}.weight", n.q_norm),
                              "attn_q_norm.weight", per_head ? c.head_dim : q_dim);
    weights.add_layer_qk_norm(l, "k_norm", fmt::format("self_attn.{}.weight", n.k_norm),
                              "attn_k_norm.weight", per_head ? c.head_dim : kv_dim);
  }
  projection("v", "v_proj", "attn_v.weight", q_dim + kv_dim, kv_dim, Split::kKvOutputs);
  bias("v", "v_proj", "attn_v.bias", kv_dim, Split::kKvOutputs);
  if (options_.sinks) {
    weights.add_layer(l, "sinks", "self_attn.sinks", "attn_sinks.weight", {c.num_heads},
                      Split::kOutputs);
  }
  const std::string& output = options_.names.output;
  weights.add_layer(l, "o_proj", fmt::format("self_attn.{}.weight", output), "attn_output.weight",
                    {c.hidden_size, q_dim}, Split::kInputs);
  if (c.linear_bias) {
    weights.add_layer(l, "o_bias", fmt::format("self_attn.{}.bias", output), "attn_output.bias",
                      {c.hidden_size});
  }
}

Value AttentionBlock::qk_norm(DecoderGraph& graph, Value x, int64_t layer, const char* name,
                              int64_t heads) const {
  const ModelConfig& c = graph.config();
  switch (options_.qk_norm) {
    case QkNorm::kNone:
      return x;
    case QkNorm::kAcrossHeads:
      return rms_norm(x, graph.norm_weight(graph.layer_weight(layer, name)), c.rms_norm_eps);
    case QkNorm::kPerHead:
      return reshape(
          rms_norm_heads(reshape(x, {graph.tokens(), heads, c.head_dim}),
                         graph.norm_weight(graph.layer_weight(layer, name)), c.rms_norm_eps),
          {graph.tokens(), heads * c.head_dim});
  }
  return x;
}

Value AttentionBlock::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  const int64_t tokens = graph.tokens();
  const bool sliding = options_.sliding_window && c.is_sliding_layer(l);
  auto projection = [&](const char* name) {
    return linear(x, graph.layer_matrix(l, fmt::format("{}_proj", name)),
                  graph.optional_layer_weight(l, fmt::format("{}_bias", name)));
  };
  Value q = qk_norm(graph, projection("q"), l, "q_norm", c.num_heads);
  Value k = qk_norm(graph, projection("k"), l, "k_norm", c.num_kv_heads);
  q = reshape(q, {tokens, c.num_heads, c.head_dim});
  k = reshape(k, {tokens, c.num_kv_heads, c.head_dim});
  Value v = reshape(projection("v"), {tokens, c.num_kv_heads, c.head_dim});
  if (!c.skips_rope(l)) {
    const Rotary& rope = graph.rope(sliding && options_.local_rope);
    q = apply_rotary(q, rope);
    k = apply_rotary(k, rope);
  }
  const CacheRead cache = graph.update_cache(l, k, v);
  AttentionInputs in{
      .q = graph.by_sequence(q),
      .k_cache = cache.keys,
      .v_cache = cache.values,
      .whole_k_cache = cache.whole_keys,
      .whole_v_cache = cache.whole_values,
      .positions = graph.query_positions(),
      .key_positions = cache.positions,
      .end = graph.key_end(),
      .sees_through = graph.sees_through(),
      .scale = options_.scale,
      .softcap = options_.softcap,
      .sliding_window = sliding ? c.sliding_window : std::nullopt,
      .sinks = options_.sinks ? graph.optional_layer_weight(l, "sinks") : std::nullopt,
      .kernel = graph.options().attention_kernel()};
  std::optional<Value> attended = kernel_attention(in);
  if (attended) {
    graph.read_to_length(fmt::format("k_cache_{}", l));
    graph.read_to_length(fmt::format("v_cache_{}", l));
  } else {
    attended = attention(in);
  }
  return linear(*attended, graph.layer_matrix(l, "o_proj"),
                graph.optional_layer_weight(l, "o_bias"));
}

void AttentionBlock::add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config,
                                int64_t layer, ElementType element, int64_t slots,
                                int64_t capacity) const {
  const int64_t rows = keeps_window(config, layer, capacity) ? *config.sliding_window : capacity;
  const std::vector<int64_t> shape = {slots, config.num_kv_heads, rows, config.head_dim};
  caches.push_back({fmt::format("k_cache_{}", layer), element, shape, Split::kKvHeads});
  caches.push_back({fmt::format("v_cache_{}", layer), element, shape, Split::kKvHeads});
}

bool AttentionBlock::keeps_window(const ModelConfig& config, int64_t layer,
                                  int64_t capacity) const {
  return options_.sliding_window && config.is_sliding_layer(layer) &&
         *config.sliding_window < capacity;
}

}  // namespace xlacel::models
