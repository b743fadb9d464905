#pragma once
// Which graph to emit for a model. This header is the contract between the model graphs
// (src/models), the compile cache and the CLI: one module per graph, its entry function
// public and named "main" (what XLA requires; IREE calls it as module.main).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model_files/model_config.h"

namespace xlacel::models {

enum class GraphKind {
  kPrefill,       // a bucket of prompt tokens written into the KV cache at an offset
  kDecode,        // one token -> next token id by on-device argmax
  kDecodeLogits,  // one token -> logits, for host-side sampling
};
enum class WeightType { kF32, kBF16, kF16 };

struct GraphOptions {
  GraphKind kind = GraphKind::kDecode;
  int64_t bucket = 1;      // tokens per call (prefill bucket; 1 for decode graphs)
  int64_t capacity = 512;  // KV-cache positions (context-capacity bucket)
  WeightType weights = WeightType::kF32;
};

const char* graph_kind_name(GraphKind kind);  // "prefill", "decode", "decode-logits"
std::optional<GraphKind> parse_graph_kind(std::string_view name);
const char* weight_type_name(WeightType type);  // "f32", "bf16", "f16"
std::optional<WeightType> parse_weight_type(std::string_view name);

// A short name for the graph, e.g. "decode-b1-c512-f32".
std::string graph_name(const GraphOptions& options);
// The emitted module's name ("xlacel_decode_logits"), which IREE uses to name the module.
std::string module_name(GraphKind kind);

// Graph signatures (argument order in full: models/weight_layout.h). Every graph's `main` takes
//   prefill:        tokens i32[bucket], start i32[], valid_length i32[], weights..., caches...
//   decode(-logits): tokens i32[1], position i32[], weights..., caches...
// and returns
//   prefill:        next_token i32[] (argmax, ties to the lower id), logits f32[vocab], caches...
//   decode:         next_token i32[], caches...
//   decode-logits:  logits f32[vocab], caches...
// where caches are k_cache_0, v_cache_0, k_cache_1, ... ([kv_heads, capacity, head_dim], see
// cache_element in weight_layout.h), each argument aliased (tf.aliasing_output) to its result.
// Prefill runs tokens [0, valid_length) of the bucket at positions start + i (the rest is
// padding), writes all `bucket` K/V rows at `start` and returns the logits of token
// valid_length - 1. The caller keeps start + bucket <= capacity (dynamic_update_slice clamps
// the offset otherwise): a final chunk that would overrun re-feeds earlier tokens instead
// (start = total - bucket). Padding rows written past the valid tokens are never read before
// being overwritten, since a query at position p reads keys <= p only.
// The StableHLO text of one graph; throws Error naming the problem for options the config
// cannot honour (bucket > capacity, capacity > max positions, ...).
std::string emit_graph(const ModelConfig& config, const GraphOptions& options);

}  // namespace xlacel::models
