// emit_graph for the Llama family (llama, mistral, qwen2): the decoder stack of llama_layers.h
// over the weight arguments of weight_layout.h and a per-layer KV cache; see graph_options.h for
// each graph's inputs and results.
#include <fmt/format.h>

#include <map>

#include "common/error.h"
#include "models/graph_options.h"
#include "models/llama_layers.h"
#include "models/weight_layout.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

void check_options(const ModelConfig& config, const GraphOptions& options) {
  const std::string where = fmt::format("{} graph", graph_kind_name(options.kind));
  if (options.bucket < 1) fail(where, "bucket must be at least 1 (got {})", options.bucket);
  if (options.kind != GraphKind::kPrefill && options.bucket != 1) {
    fail(where, "decode graphs take one token per call (bucket 1, got {})", options.bucket);
  }
  if (options.capacity < options.bucket) {
    fail(where, "bucket ({}) exceeds the KV-cache capacity ({})", options.bucket, options.capacity);
  }
  if (config.max_position_embeddings > 0 && options.capacity > config.max_position_embeddings) {
    fail(where, "capacity ({}) exceeds the model's max_position_embeddings ({})", options.capacity,
         config.max_position_embeddings);
  }
  if (config.num_heads % config.num_kv_heads != 0) {
    fail(where, "num_heads ({}) is not a multiple of num_kv_heads ({})", config.num_heads,
         config.num_kv_heads);
  }
}

}  // namespace

std::string emit_graph(const ModelConfig& config, const GraphOptions& options) {
  check_options(config, options);
  const ModelConfig& c = config;
  const bool prefill = options.kind == GraphKind::kPrefill;
  Module module(module_name(options.kind));
  Function& f = module.add_function("main");
  Block& b = f.body();
  const TensorType scalar_i32(ElementType::kI32, {});

  // Inputs.
  const int64_t tokens = options.bucket;
  Value token_ids = f.argument("tokens", TensorType(ElementType::kI32, {tokens}));
  Value start = f.argument(prefill ? "start" : "position", scalar_i32);
  Value valid = prefill ? f.argument("valid_length", scalar_i32) : Value();

  // Weights.
  std::map<std::string, Value> w;
  for (const WeightSpec& spec : weight_specs(c, options.weights)) {
    w[spec.name] = f.argument(spec.name, TensorType(spec.element, spec.shape));
  }
  auto weight = [&](int64_t layer, const char* name) {
    return w.at(fmt::format("l{}_{}", layer, name));
  };
  auto bias = [&](int64_t layer, const char* name) -> std::optional<Value> {
    if (!c.attention_bias) return std::nullopt;
    return weight(layer, name);
  };

  // KV cache.
  const TensorType cache_type(cache_element(options.weights),
                              {c.num_kv_heads, options.capacity, c.head_dim});
  std::vector<Value> caches;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    caches.push_back(f.argument(fmt::format("k_cache_{}", l), cache_type));
    caches.push_back(f.argument(fmt::format("v_cache_{}", l), cache_type));
  }

  if (!prefill) valid = constant(b, scalar_i32, 1.0);  // after the last argument

  // Positions start .. start + T - 1; keys at or beyond start + valid_length are masked.
  Value positions =
      iota(b, TensorType(ElementType::kI32, {tokens}), 0) + broadcast_in_dim(start, {tokens}, {});
  Value end = start + valid;
  Rotary rope = rotary(positions, w.at("rope_inv_freq"));
  Value zero = constant(b, scalar_i32, 0.0);

  Value h = take(w.at("embed_tokens"), token_ids);  // [T, hidden]
  if (h.element() != ElementType::kF32) h = convert(h, ElementType::kF32);
  std::vector<Value> new_caches;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Value x = rms_norm(h, weight(l, "input_norm"), c.rms_norm_eps);
    Value q = reshape(linear(x, weight(l, "q_proj"), bias(l, "q_bias")),
                      {tokens, c.num_heads, c.head_dim});
    Value k = reshape(linear(x, weight(l, "k_proj"), bias(l, "k_bias")),
                      {tokens, c.num_kv_heads, c.head_dim});
    Value v = reshape(linear(x, weight(l, "v_proj"), bias(l, "v_bias")),
                      {tokens, c.num_kv_heads, c.head_dim});
    q = apply_rotary(q, rope);
    k = apply_rotary(k, rope);
    // [T, Hkv, D] -> [Hkv, T, D] in the cache's element type, written at `start`.
    auto store = [&](Value cache, Value rows) {
      rows = transpose(rows, {1, 0, 2});
      if (rows.element() != cache.element()) rows = convert(rows, cache.element());
      return dynamic_update_slice(cache, rows, {zero, start, zero});
    };
    Value k_cache = store(caches[static_cast<size_t>(2 * l)], k);
    Value v_cache = store(caches[static_cast<size_t>(2 * l + 1)], v);
    new_caches.push_back(k_cache);
    new_caches.push_back(v_cache);
    Value attn = attention({q, k_cache, v_cache, positions, end});
    h = h + linear(attn, weight(l, "o_proj"));
    Value y = rms_norm(h, weight(l, "post_norm"), c.rms_norm_eps);
    h = h + mlp(y, weight(l, "gate_proj"), weight(l, "up_proj"), weight(l, "down_proj"));
  }

  // Logits of the last valid token only.
  Value last = h;
  if (tokens > 1) {
    Value row = valid - constant(b, scalar_i32, 1.0);
    last = dynamic_slice(h, {row, zero}, {1, c.hidden_size});
  }
  last = rms_norm(last, w.at("final_norm"), c.rms_norm_eps);
  Value head = c.tie_word_embeddings ? w.at("embed_tokens") : w.at("lm_head");
  Value logits = reshape(linear(last, head), {c.vocab_size});

  std::vector<Value> results;
  if (options.kind != GraphKind::kDecodeLogits) results.push_back(argmax(logits, 0).indices);
  if (options.kind != GraphKind::kDecode) results.push_back(logits);
  const auto first_cache = static_cast<int64_t>(results.size());
  for (size_t i = 0; i < new_caches.size(); ++i) {
    f.alias_output(caches[i], first_cache + static_cast<int64_t>(i));
    results.push_back(new_caches[i]);
  }
  f.finish(results);
  return module.to_text();
}

}  // namespace xlacel::models
