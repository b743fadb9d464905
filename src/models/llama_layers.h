#pragma once
// The building blocks of a Llama-family decoder as StableHLO, each matching transformers'
// float32 computation (LlamaRMSNorm, LlamaRotaryEmbedding + apply_rotary_pos_emb, eager/SDPA
// attention with repeat_kv, LlamaMLP). Activations are f32 [tokens, features]; weights may be
// bf16/f16, in which case matmul inputs are narrowed to the weight type and accumulate in f32.
#include <optional>

#include "models/resident_weight.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using stablehlo::Value;

// x @ weight^T (+ bias): x f32 [T, in], weight [out, in] -> f32 [T, out]. A planar weight
// (resident_weight.h) is dequantized inside the product.
Value linear(Value x, const Weight& weight, std::optional<Value> bias = std::nullopt);

// HF LlamaRMSNorm in f32: weight * (x * rsqrt(mean(x^2, -1) + eps)); x f32 [T, hidden].
Value rms_norm(Value x, Value weight, double eps);

struct Rotary {
  Value cos;  // f32 [T, head_dim]: cos(cat(freqs, freqs)), freqs = position * inv_freq
  Value sin;
};
// positions i32 [T]; inv_freq f32 [head_dim/2].
Rotary rotary(Value positions, Value inv_freq);
// x f32 [T, heads, head_dim] -> x * cos + rotate_half(x) * sin.
Value apply_rotary(Value x, const Rotary& rotary);

struct AttentionInputs {
  Value q;        // f32 [N, T, heads, head_dim], rotated: T queries of each of N sequences
  Value k_cache;  // [N, kv_heads, keys, head_dim]: each sequence's first keys, this call's written
  Value v_cache;
  Value positions;           // i32 [N, T]: position of each query
  std::optional<Value> end;  // i32 [N]: keys at positions >= end are masked (prefill's
                             // start + valid_length); absent: only c <= position counts
};
// Causal GQA attention of each sequence over its own cache; head h reads kv head
// h / (heads / kv_heads). Key c is visible to a query at position p when c <= p (and c < end).
// Scores scaled by 1/sqrt(head_dim), softmax in f32. Result f32 [N * T, heads * head_dim].
Value attention(const AttentionInputs& in);

// SwiGLU: down(silu(gate(x)) * up(x)).
Value mlp(Value x, const Weight& gate, const Weight& up, const Weight& down);

}  // namespace xlacel::models
