// emit_decoder_graph: the decoder stack of llama_layers.h over the weight arguments of
// weight_layout.h and a per-layer KV cache of `slots` sequences (a ring on sliding layers whose
// window is shorter than the capacity: cache_access.h), shaped by a DecoderFamily; see
// graph_options.h for each graph's inputs and results.
#include "models/llama_graph.h"

#include <fmt/format.h>

#include <map>

#include "models/cache_access.h"
#include "models/llama_layers.h"
#include "models/tensor_parallel.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

TensorType type_of(const TensorSpec& spec) {
  return {spec.element, spec.shape};
}

}  // namespace

EmittedGraph emit_decoder_graph(const ModelConfig& config, const DecoderFamily& family,
                                const GraphOptions& options, const GraphSignature& signature) {
  const ModelConfig& c = config;
  const bool prefill = options.kind == GraphKind::kPrefill;
  Module module(module_name(options.kind));
  Function& f = module.add_function("main");
  Block& b = f.body();

  // Arguments, exactly as the signature lists them.
  std::map<std::string, Value> in;
  for (const TensorSpec& spec : signature.inputs) {
    in[spec.name] = f.argument(spec.name, type_of(spec));
  }
  std::map<std::string, Value> w;
  for (const WeightSpec& spec : signature.weights) {
    w[spec.name] = f.argument(spec.name, TensorType(spec.element, spec.shape));
  }
  std::vector<Value> caches;
  for (const TensorSpec& spec : signature.caches) {
    caches.push_back(f.argument(spec.name, type_of(spec)));
  }
  auto weight = [&](int64_t layer, const char* name) {
    return w.at(fmt::format("l{}_{}", layer, name));
  };
  // A matrix weight, possibly kept as planes of a block format (resident_weight.h).
  const bool widen = options.weights == WeightType::kAuto;
  auto named_matrix = [&](const std::string& name) {
    return resident_weight(w, name, widen, options.planar_kernel());
  };
  auto matrix = [&](int64_t layer, const char* name) {
    return named_matrix(fmt::format("l{}_{}", layer, name));
  };
  auto bias = [&](int64_t layer, const char* name) -> std::optional<Value> {
    if (!c.attention_bias) return std::nullopt;
    return weight(layer, name);
  };

  // T activation rows: prefill's bucket of each of its sequences (one, or options.sequences),
  // or decode's one token of each of N = bucket sequences.
  const int64_t sequences = prefill ? options.sequences : options.bucket;
  const int64_t tokens = prefill ? options.bucket * sequences : options.bucket;
  const int64_t per_sequence = tokens / sequences;
  const TensorType scalar_i32(ElementType::kI32, {});
  // Sequence s's value of a prefill input (a scalar when the call has one sequence).
  auto of_sequence = [&](const char* name, int64_t s) {
    Value value = in.at(name);
    if (sequences == 1) return value;
    return reshape(slice(value, {s}, {s + 1}), {});
  };
  Value positions;  // i32 [T]
  std::optional<Value> end;
  std::optional<CacheAccess> access;
  Value token_ids = in.at("tokens");
  if (prefill) {
    // Positions start .. start + bucket - 1 of each sequence; keys at or beyond its start +
    // valid_length are masked.
    std::vector<PrefillChunkRows> chunks;
    std::vector<Value> chunk_positions, ends;
    for (int64_t s = 0; s < sequences; ++s) {
      PrefillChunkRows chunk{of_sequence("slot", s), of_sequence("start", s),
                             of_sequence("valid_length", s)};
      chunk_positions.push_back(iota(b, TensorType(ElementType::kI32, {per_sequence}), 0) +
                                broadcast_in_dim(chunk.start, {per_sequence}, {}));
      ends.push_back(reshape(chunk.start + chunk.valid_length, {1}));
      chunks.push_back(chunk);
    }
    positions = sequences == 1 ? chunk_positions[0] : concatenate(chunk_positions, 0);
    end = sequences == 1 ? ends[0] : concatenate(ends, 0);
    access = CacheAccess::prefill(std::move(chunks), per_sequence, options.window);
    if (sequences > 1) token_ids = reshape(token_ids, {tokens});
  } else {
    positions = in.at("positions");
    access = CacheAccess::decode(positions, options.window);
  }
  // Adjacent pairs turn where the family says so, or where q/k rows are as GGUF interleaves them.
  const bool interleaved = family.interleaved_rope || c.qk_rows_interleaved;
  Rotary rope = rotary(positions, w.at("rope_inv_freq"), interleaved);
  std::optional<Rotary> local_rope;
  if (family.local_rope) local_rope = rotary(positions, w.at("rope_local_inv_freq"), interleaved);

  // A norm of the family's kind: w * x_hat, or (1 + w) * x_hat with 1 + w in f32.
  auto norm_weight = [&](Value scale) {
    if (family.norm_weight == NormWeight::kScale) return scale;
    if (scale.element() != ElementType::kF32) scale = convert(scale, ElementType::kF32);
    return scale + constant(b, scale.type(), 1.0);
  };
  // The norm whose weight argument is `name` (its bias `name`_bias for LayerNorms).
  auto norm = [&](Value x, const std::string& name) {
    if (family.layer_norm) return layer_norm(x, w.at(name), w.at(name + "_bias"), c.rms_norm_eps);
    if (family.cohere_norm) return cohere_layer_norm(x, w.at(name), c.rms_norm_eps);
    return rms_norm(x, norm_weight(w.at(name)), c.rms_norm_eps);
  };
  auto layer_name = [](int64_t layer, const char* name) {
    return fmt::format("l{}_{}", layer, name);
  };
  auto linear_bias = [&](int64_t layer, const char* name) -> std::optional<Value> {
    if (!c.linear_bias) return std::nullopt;
    return weight(layer, name);
  };
  auto scaled = [&](Value x, double scale) {
    return scale == 1.0 ? x : x * constant(b, x.type(), scale);
  };
  auto qk_norm = [&](Value x, int64_t layer, const char* name, int64_t heads) {
    switch (family.qk_norm) {
      case QkNorm::kNone:
        return x;
      case QkNorm::kAcrossHeads:
        return rms_norm(x, norm_weight(weight(layer, name)), c.rms_norm_eps);
      case QkNorm::kPerHead:
        return reshape(rms_norm_heads(reshape(x, {tokens, heads, c.head_dim}),
                                      norm_weight(weight(layer, name)), c.rms_norm_eps),
                       {tokens, heads * c.head_dim});
    }
    return x;
  };

  Value h = take_rows(named_matrix("embed_tokens"), token_ids);  // f32 [T, hidden]
  h = scaled(h, family.embedding_scale);
  std::vector<Value> new_caches;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const bool sliding = family.sliding_window && c.is_sliding_layer(l);
    Value x = family.input_norm ? norm(h, layer_name(l, "input_norm")) : h;
    Value q = qk_norm(linear(x, matrix(l, "q_proj"), bias(l, "q_bias")), l, "q_norm", c.num_heads);
    Value k =
        qk_norm(linear(x, matrix(l, "k_proj"), bias(l, "k_bias")), l, "k_norm", c.num_kv_heads);
    q = reshape(q, {tokens, c.num_heads, c.head_dim});
    k = reshape(k, {tokens, c.num_kv_heads, c.head_dim});
    Value v = reshape(linear(x, matrix(l, "v_proj"), bias(l, "v_bias")),
                      {tokens, c.num_kv_heads, c.head_dim});
    if (!c.skips_rope(l)) {
      const Rotary& layer_rope = sliding && local_rope ? *local_rope : rope;
      q = apply_rotary(q, layer_rope);
      k = apply_rotary(k, layer_rope);
    }
    CacheUpdate cache =
        access->update(caches[static_cast<size_t>(2 * l)], caches[static_cast<size_t>(2 * l + 1)],
                       k, v, options.capacity);
    new_caches.push_back(cache.k_cache);
    new_caches.push_back(cache.v_cache);
    AttentionInputs attention_in{
        .q = reshape(q, {sequences, per_sequence, c.num_heads, c.head_dim}),
        .k_cache = cache.read.keys,
        .v_cache = cache.read.values,
        .whole_k_cache = cache.read.whole_keys,
        .whole_v_cache = cache.read.whole_values,
        .positions = reshape(positions, {sequences, per_sequence}),
        .key_positions = cache.read.positions,
        .end = end,
        .scale = family.attention_scale,
        .softcap = family.attention_softcap,
        .sliding_window = sliding ? c.sliding_window : std::nullopt,
        .kernel = options.attention_kernel()};
    Value attn = linear(attention(attention_in), matrix(l, "o_proj"), linear_bias(l, "o_bias"));
    if (family.attn_out_norm) attn = norm(attn, layer_name(l, "attn_out_norm"));
    h = h + scaled(attn, family.residual_scale);
    // The parallel block's MLP reads the attention's normed input.
    Value y = family.parallel_block ? x
              : family.ffn_in_norm  ? norm(h, layer_name(l, "post_norm"))
                                    : h;
    Value ffn = y;
    if (c.num_experts > 0) {
      std::vector<Expert> experts;
      for (int64_t e = 0; e < c.num_experts; ++e) {
        auto expert = [&](const char* name) {
          return named_matrix(fmt::format("l{}_e{}_{}", l, e, name));
        };
        experts.push_back({expert("gate_proj"), expert("up_proj"), expert("down_proj")});
      }
      ffn = mixture_of_experts(y, matrix(l, "router"), experts, c.experts_per_token,
                               c.norm_topk_prob, family.activation);
    } else if (family.gated_mlp) {
      ffn = mlp(y, matrix(l, "gate_proj"), matrix(l, "up_proj"), matrix(l, "down_proj"),
                family.activation);
    } else {
      ffn = dense_mlp(y, matrix(l, "up_proj"), linear_bias(l, "up_bias"), matrix(l, "down_proj"),
                      linear_bias(l, "down_bias"), family.activation);
    }
    if (family.ffn_out_norm) ffn = norm(ffn, layer_name(l, "ffn_out_norm"));
    h = h + scaled(ffn, family.residual_scale);
  }

  // Logits: prefill's last valid token of each sequence; every row for decode.
  Value last = h;
  if (prefill && tokens > 1) {
    std::vector<Value> lasts;
    for (int64_t s = 0; s < sequences; ++s) {
      Value row = of_sequence("valid_length", s) +
                  constant(b, scalar_i32, static_cast<double>(s * per_sequence - 1));
      lasts.push_back(dynamic_slice(h, {row, constant(b, scalar_i32, 0.0)}, {1, c.hidden_size}));
    }
    last = sequences == 1 ? lasts[0] : concatenate(lasts, 0);
  }
  last = norm(last, "final_norm");
  Weight head = named_matrix(c.tie_word_embeddings ? "embed_tokens" : "lm_head");
  Value logits = linear(last, head);  // [rows, vocab]
  if (family.logits_divisor != 1.0) {
    logits = logits / constant(b, logits.type(), family.logits_divisor);
  }
  if (family.logits_multiplier != 1.0) {
    logits = logits * constant(b, logits.type(), family.logits_multiplier);
  }
  if (family.final_softcap) logits = softcap(logits, *family.final_softcap);
  const bool transformed = family.logits_divisor != 1.0 || family.logits_multiplier != 1.0 ||
                           family.final_softcap.has_value();
  // Prefill returns the logits and their argmax. Fused into one dispatch, IREE's llvm-cpu keeps
  // the whole transformed row on the stack (vocab x 4 bytes: over its 32 KiB limit past 8192
  // tokens); the barrier has the transform write the logits and the argmax read them back, as
  // it does when no transform comes between the head and the argmax.
  if (prefill && transformed) logits = optimization_barrier(logits);
  std::map<std::string, Value> produced;
  if (prefill && sequences == 1) {
    logits = reshape(logits, {c.vocab_size});
    produced["logits"] = logits;
    produced["next_token"] = argmax(logits, 0).indices;
  } else if (prefill) {
    produced["logits"] = logits;
    produced["next_token"] = argmax(logits, 1).indices;
  } else if (options.kind == GraphKind::kDecode) {
    produced["next_tokens"] = argmax(logits, 1).indices;
  } else {
    produced["logits"] = logits;
  }

  std::vector<Value> results;
  for (const TensorSpec& spec : signature.outputs) {
    Value value = produced.at(spec.name);
    if (value.type() != type_of(spec)) {
      build_fail("func.func", "@main: output {} is {} but the signature says {}", spec.name,
                 value.type().str(), type_of(spec).str());
    }
    results.push_back(value);
  }
  const auto first_cache = static_cast<int64_t>(results.size());
  for (size_t i = 0; i < new_caches.size(); ++i) {
    f.alias_output(caches[i], first_cache + static_cast<int64_t>(i));
    results.push_back(new_caches[i]);
  }
  f.finish(results);
  annotate_shardings(module, f, config, signature, options.tensor_parallel);
  return emitted_graph(module);
}

}  // namespace xlacel::models
