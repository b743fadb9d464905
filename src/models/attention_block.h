#pragma once
// Self-attention as a decoder layer's block: q/k/v projections (biases where the config has
// them; fused in one tensor where the family stores them so), optional q/k RMSNorms, RoPE
// (skipped on the layers the config says), the layer's KV cache, causal GQA attention (a window
// on sliding layers) and the output projection. AttentionOptions holds where families differ.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/decoder_graph.h"
#include "models/decoder_weights.h"
#include "models/graph_signature.h"

namespace xlacel::models {

enum class QkNorm {
  kNone,
  kPerHead,      // RMSNorm of each head's q/k over head_dim, before RoPE (Qwen 3, Gemma 3)
  kAcrossHeads,  // RMSNorm of the whole q/k projection (heads * head_dim), before RoPE (OLMo 2)
};

// HF names of a family's attention tensors where they are not Llama's (LFM2: out_proj,
// q_layernorm, k_layernorm): self_attn.<name>.weight.
struct AttentionNames {
  std::string output = "o_proj";
  std::string q_norm = "q_norm", k_norm = "k_norm";
};

struct AttentionOptions {
  QkNorm qk_norm = QkNorm::kNone;
  // q, k and v rows in one HF/GGUF tensor (self_attn.qkv_proj, attn_qkv) the loader splits (Phi-3).
  bool fused_qkv = false;
  bool interleaved_rope = false;  // RoPE on adjacent pairs (Cohere)
  // Layers the config marks "sliding_attention" mask keys older than config.sliding_window.
  bool sliding_window = false;
  // Sliding layers take their RoPE frequencies from rope_local_theta / rope_local_scaling
  // (weight rope_local_inv_freq).
  bool local_rope = false;
  double scale = 0;                              // scores * scale; 0: 1/sqrt(head_dim)
  std::optional<double> softcap = std::nullopt;  // scores: cap * tanh(scores / cap) (Gemma 2)
  // A learned sink logit per head in the softmax (gpt-oss: l<L>_sinks, HF self_attn.sinks,
  // GGUF attn_sinks.weight).
  bool sinks = false;
  AttentionNames names = {};
};

class AttentionBlock {
 public:
  explicit AttentionBlock(AttentionOptions options) : options_(options) {}
  const AttentionOptions& options() const { return options_; }

  // l<L>_q_proj (+ _q_bias), _k_proj (+ _k_bias), _q_norm and _k_norm (q/k norms), _v_proj
  // (+ _v_bias), _o_proj (+ _o_bias where config.linear_bias).
  void add_weights(DecoderWeights& weights, int64_t layer) const;
  // x f32 [T, hidden] (normed) -> the output projection's f32 [T, hidden].
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const;
  // k_cache_<L> and v_cache_<L> [slots, kv_heads, rows, head_dim] of `element`: rows the
  // capacity, or a sliding layer's window where it keeps only that (a ring, cache_access.h).
  void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                  stablehlo::ElementType element, int64_t slots, int64_t capacity) const;
  // Whether layer `layer` keeps only its window (a ring, cache_access.h) in a cache of
  // `capacity` positions.
  bool keeps_window(const ModelConfig& config, int64_t layer, int64_t capacity) const;

 private:
  Value qk_norm(DecoderGraph& graph, Value x, int64_t layer, const char* name, int64_t heads) const;

  AttentionOptions options_;
};

}  // namespace xlacel::models
