// emit_llama_graph: the decoder stack of llama_layers.h over the weight arguments of
// weight_layout.h and a per-layer KV cache of `slots` sequences; see graph_options.h for each
// graph's inputs and results.
#include "models/llama_graph.h"

#include <fmt/format.h>

#include <map>

#include "models/llama_layers.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

TensorType type_of(const TensorSpec& spec) {
  return {spec.element, spec.shape};
}

// Where this call's K/V rows go and which cache rows attention reads.
struct CacheAccess {
  GraphKind kind;
  Value slot;       // prefill: the slot written and read
  Value start;      // prefill: position of the first row written
  Value row_index;  // decode: i32 [bucket, kv_heads, 3], (slot b, head h, positions[b])
  int64_t rows;     // decode: slots 0 .. rows-1 are read
  int64_t window;   // decode: cache rows 0 .. window-1 of each are read
  Value zero;       // i32 0, for the offsets of dimensions that are not moved

  // `rows_kvd` f32 [T, kv_heads, head_dim] written into `cache`; returns the new cache.
  Value store(Value cache, Value rows_kvd) const {
    if (rows_kvd.element() != cache.element()) rows_kvd = convert(rows_kvd, cache.element());
    if (kind == GraphKind::kPrefill) {
      // [T, Hkv, D] -> [1, Hkv, T, D], written at (slot, 0, start, 0).
      const std::vector<int64_t>& s = rows_kvd.shape();
      Value block = reshape(transpose(rows_kvd, {1, 0, 2}), {1, s[1], s[0], s[2]});
      return dynamic_update_slice(cache, block, {slot, zero, start, zero});
    }
    // Row b, head h: its [D] window replaces cache[b, h, positions[b], :] (each row its own
    // position). One index per (row, head) rather than one per row with an [Hkv, D] window:
    // IREE 3.13 cannot lower a scatter whose inserted window dims are not the leading ones
    // ("expected indices to be equal to batch rank or batch rank + 1").
    ScatterDimensions d{.update_window_dims = {2},
                        .inserted_window_dims = {0, 1, 2},
                        .scatter_dims_to_operand_dims = {0, 1, 2},
                        .index_vector_dim = 2};
    return scatter_replace(cache, row_index, rows_kvd, d,
                           {.indices_are_sorted = true, .unique_indices = true});
  }

  // The caches attention reads: [N, Hkv, keys, D] (prefill: the slot's, every row; decode: slots
  // 0..rows-1, rows 0..window-1).
  Value view(Value cache) const {
    std::vector<int64_t> shape = cache.shape();
    if (kind == GraphKind::kPrefill) {
      shape[0] = 1;
      return dynamic_slice(cache, {slot, zero, zero, zero}, shape);
    }
    shape[0] = rows;
    shape[2] = window;
    return slice(cache, {0, 0, 0, 0}, shape);
  }
};

}  // namespace

std::string emit_llama_graph(const ModelConfig& config, const GraphOptions& options,
                             const GraphSignature& signature) {
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
  const bool widen = options.weights == WeightType::kAuto;
  auto matrix = [&](const std::string& name) { return resident_weight(w, name, widen); };
  auto weight = [&](int64_t layer, const char* name) {
    return matrix(fmt::format("l{}_{}", layer, name));
  };
  auto vector = [&](int64_t layer, const char* name) {
    return w.at(fmt::format("l{}_{}", layer, name));
  };
  auto bias = [&](int64_t layer, const char* name) -> std::optional<Value> {
    if (!c.attention_bias) return std::nullopt;
    return vector(layer, name);
  };

  // T activation rows: prefill's bucket of one sequence, or decode's one token of each of
  // N = bucket sequences.
  const int64_t tokens = options.bucket;
  const int64_t sequences = prefill ? 1 : tokens;
  const TensorType scalar_i32(ElementType::kI32, {});
  Value positions;  // i32 [T]
  std::optional<Value> end;
  CacheAccess access{options.kind, Value(), Value(),
                     Value(),      tokens,  options.window > 0 ? options.window : options.capacity,
                     Value()};
  if (prefill) {
    // Positions start .. start + T - 1; keys at or beyond start + valid_length are masked.
    access.slot = in.at("slot");
    access.zero = constant(b, scalar_i32, 0.0);
    access.start = in.at("start");
    positions = iota(b, TensorType(ElementType::kI32, {tokens}), 0) +
                broadcast_in_dim(access.start, {tokens}, {});
    end = reshape(access.start + in.at("valid_length"), {1});
  } else {
    positions = in.at("positions");
    const TensorType index_type(ElementType::kI32, {tokens, c.num_kv_heads, 1});
    access.row_index = concatenate({iota(b, index_type, 0), iota(b, index_type, 1),
                                    broadcast_in_dim(positions, index_type.shape(), {0})},
                                   2);
  }
  Rotary rope = rotary(positions, w.at("rope_inv_freq"));

  Value h = take_rows(matrix("embed_tokens"), in.at("tokens"));  // f32 [T, hidden]
  std::vector<Value> new_caches;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Value x = rms_norm(h, vector(l, "input_norm"), c.rms_norm_eps);
    Value q = reshape(linear(x, weight(l, "q_proj"), bias(l, "q_bias")),
                      {tokens, c.num_heads, c.head_dim});
    Value k = reshape(linear(x, weight(l, "k_proj"), bias(l, "k_bias")),
                      {tokens, c.num_kv_heads, c.head_dim});
    Value v = reshape(linear(x, weight(l, "v_proj"), bias(l, "v_bias")),
                      {tokens, c.num_kv_heads, c.head_dim});
    q = apply_rotary(q, rope);
    k = apply_rotary(k, rope);
    Value k_cache = access.store(caches[static_cast<size_t>(2 * l)], k);
    Value v_cache = access.store(caches[static_cast<size_t>(2 * l + 1)], v);
    new_caches.push_back(k_cache);
    new_caches.push_back(v_cache);
    Value attn = attention({reshape(q, {sequences, tokens / sequences, c.num_heads, c.head_dim}),
                            access.view(k_cache), access.view(v_cache),
                            reshape(positions, {sequences, tokens / sequences}), end});
    h = h + linear(attn, weight(l, "o_proj"));
    Value y = rms_norm(h, vector(l, "post_norm"), c.rms_norm_eps);
    h = h + mlp(y, weight(l, "gate_proj"), weight(l, "up_proj"), weight(l, "down_proj"));
  }

  // Logits: prefill's last valid token; every row for decode.
  Value last = h;
  if (prefill && tokens > 1) {
    Value row = in.at("valid_length") - constant(b, scalar_i32, 1.0);
    last = dynamic_slice(h, {row, access.zero}, {1, c.hidden_size});
  }
  last = rms_norm(last, w.at("final_norm"), c.rms_norm_eps);
  Weight head = matrix(c.tie_word_embeddings ? "embed_tokens" : "lm_head");
  Value logits = linear(last, head);  // [rows, vocab]
  std::map<std::string, Value> produced;
  if (prefill) {
    logits = reshape(logits, {c.vocab_size});
    produced["logits"] = logits;
    produced["next_token"] = argmax(logits, 0).indices;
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
  return module.to_text();
}

}  // namespace xlacel::models
