#pragma once
// The building blocks of a Llama-family decoder as StableHLO, each matching transformers'
// float32 computation (LlamaRMSNorm, LlamaRotaryEmbedding + apply_rotary_pos_emb, eager/SDPA
// attention with repeat_kv, LlamaMLP). Activations are f32 [tokens, features]; weights may be
// bf16/f16, in which case matmul inputs are narrowed to the weight type and accumulate in f32.
#include <optional>
#include <utility>
#include <vector>

#include "lowering/attention_kernel.h"
#include "models/resident_weight.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using stablehlo::Value;

// x in f32 (unchanged where it is f32 already).
Value to_f32(Value x);

// x @ weight^T (+ bias): x f32 [T, in], weight [out, in] -> f32 [T, out].
Value linear(Value x, const Weight& weight, std::optional<Value> bias = std::nullopt);

// HF LlamaRMSNorm in f32: weight * (x * rsqrt(mean(x^2, -1) + eps)); x f32 [T, hidden].
Value rms_norm(Value x, Value weight, double eps);

struct Rotary {
  Value cos;  // f32 [T, head_dim]: cos(cat(freqs, freqs)), freqs = position * inv_freq
  Value sin;
  // Cohere: cos/sin of repeat_interleave(freqs, 2), and dims (2i, 2i+1) rotate as a pair.
  bool interleaved = false;
};
// positions i32 [T]; inv_freq f32 [head_dim/2]; cos and sin times attention_scaling (LongRoPE's
// attention factor) where it is not 1.
Rotary rotary(Value positions, Value inv_freq, bool interleaved = false,
              double attention_scaling = 1.0);
// x f32 [T, heads, head_dim] -> x * cos + rotate_half(x) * sin. With cos/sin narrower than
// head_dim (partial rotary), only the first dims rotate and the rest pass through.
Value apply_rotary(Value x, const Rotary& rotary);

struct AttentionInputs {
  Value q;        // f32 [N, T, heads, head_dim], rotated: T queries of each of N sequences
  Value k_cache;  // [N, kv_heads, keys, head_dim]: each sequence's keys, this call's included
  Value v_cache;
  // Caches whose leading sequences and rows k_cache and v_cache are (CacheRead::whole_keys): the
  // kernel reads those in place.
  std::optional<Value> whole_k_cache, whole_v_cache;
  Value positions;  // i32 [N, T]: position of each query
  // i32 [N, keys]: the position each key holds, negative for none (a ring's, cache_access.h);
  // absent: key c holds position c.
  std::optional<Value> key_positions;
  std::optional<Value> end;  // i32 [N]: keys at positions >= end are masked (prefill's
                             // start + valid_length); absent: only c <= position counts
  // i32 [N, T]: the last key position each query sees, where some see past their own (Gemma 3's
  // image tokens see their whole image); absent: each its own position.
  std::optional<Value> sees_through;
  double scale = 0;                       // scores are multiplied by this; 0: 1/sqrt(head_dim)
  std::optional<double> softcap;          // scores = cap * tanh(scores / cap) before the mask
  std::optional<int64_t> sliding_window;  // keys c <= p - window are masked too
  // Learned per-head logits (gpt-oss's sinks, [heads]) that join each row's softmax as one more
  // key whose value is zero: they take weight from every key without adding to the output.
  std::optional<Value> sinks;
  // The runtime's hand-written attention (GraphOptions::attention_kernel), used where it takes
  // these.
  const lowering::AttentionKernel* kernel = nullptr;
};
// Causal GQA attention of each sequence over its own cache; head h reads kv head
// h / (heads / kv_heads). A key at position c is visible to a query at position p when c <= p
// (c <= sees_through where given; and c < end, and p - c < sliding_window). Scores scaled
// (1/sqrt(head_dim) unless `scale`), optionally soft-capped, softmax in f32, as transformers'
// eager_attention_forward. Result f32 [N * T, heads * head_dim].
Value attention(const AttentionInputs& in);
// The runtime's hand-written attention where it takes `in` (in.kernel; key c at position c: no
// ring; no soft cap, sliding window or sinks; f32 throughout), else none: what attention() tries
// first.
std::optional<Value> kernel_attention(const AttentionInputs& in);

enum class Activation {
  kSilu,      // x * sigmoid(x) (Llama's silu)
  kGeluTanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (gelu_pytorch_tanh)
};
Value activate(Value x, Activation activation);

// Gated MLP: down(act(gate(x)) * up(x)) (SwiGLU for silu, GeGLU for gelu-tanh).
Value mlp(Value x, const Weight& gate, const Weight& up, const Weight& down,
          Activation activation = Activation::kSilu);

// torch.nn.LayerNorm in f32: (x - mean) * rsqrt(var + eps) * weight (+ bias), biased variance,
// over the last axis of x f32 [T, hidden].
Value layer_norm(Value x, Value weight, std::optional<Value> bias, double eps);

// CohereLayerNorm in f32: weight * ((x - mean) * rsqrt(var + eps)), no bias.
Value cohere_layer_norm(Value x, Value weight, double eps);

// How many experts a step of `rows` rows runs: as many as its rows choose at most, or all.
int64_t expert_slots(int64_t rows, int64_t top_k, int64_t experts);
// Where a graph's rows choose every expert: the blocks of rows it groups them into by expert, or
// 0 where running every expert on every row computes no more.
int64_t expert_row_blocks(int64_t rows, int64_t top_k, int64_t experts);

// A mixture's experts' gated MLPs, each matrix stacked [E, rows, cols] (expert_matrix); biases
// [E, out] where the family has them (gpt-oss).
struct Experts {
  Weight gate, up, down;
  std::optional<Value> gate_bias = std::nullopt, up_bias = std::nullopt, down_bias = std::nullopt;
};
// How a mixture's router weighs the experts a token chooses.
struct Routing {
  int64_t top_k = 1;
  std::optional<Value> bias = std::nullopt;  // added to the router's logits (gpt-oss)
  // softmax(logits) in f32, the top_k chosen (ties to the lower expert), renormalised to sum 1
  // when `normalize` (Qwen3-MoE, OLMoE, Mixtral); or, with softmax_of_chosen, the top_k logits
  // chosen and their own softmax (gpt-oss's GptOssTopKRouter).
  bool normalize = false;
  bool softmax_of_chosen = false;
};
// What each expert computes between its projections: act(gate) * up, or gpt-oss's clamped
// SwiGLU (ModelConfig::swiglu_alpha, swiglu_limit).
struct ExpertGate {
  Activation activation = Activation::kSilu;
  std::optional<std::pair<double, double>> clamped_swiglu = std::nullopt;  // alpha, limit
};
// A sparse mixture of experts as transformers computes it (`routing`); the result sums each
// chosen expert's gated MLP times its weight, in expert order (mixture_of_experts.cpp). Where its
// rows choose fewer than all experts (decode: expert_slots), the chosen ones alone run, each read
// at its index in the stacked weights, so a step reads only their weights; where they choose
// every expert (prefill), each expert runs on the rows that chose it, in blocks
// (expert_row_blocks), or on every row where that computes no less (unchosen rows weigh 0, which
// adds exactly 0).
Value mixture_of_experts(Value x, const Weight& router, const Experts& experts,
                         const Routing& routing, const ExpertGate& gate);

// A non-gated MLP: down(act(up(x) + up_bias)) + down_bias (Starcoder2's c_fc / c_proj).
Value dense_mlp(Value x, const Weight& up, std::optional<Value> up_bias, const Weight& down,
                std::optional<Value> down_bias, Activation activation);

// RMSNorm of each head: x f32 [T, heads, head_dim], weight [head_dim] (Qwen 3, Gemma 3 q/k norms).
Value rms_norm_heads(Value x, Value weight, double eps);

// A causal depthwise convolution (nn.Conv1d with groups = channels) from each row's window of
// inputs (CacheAccess::recent_inputs): window f32 [T, taps, channels], weight [channels, taps],
// bias [channels] -> f32 [T, channels].
Value depthwise_conv(Value window, Value weight, std::optional<Value> bias);

// cap * tanh(x / cap), in f32 (Gemma 2 soft-capping).
Value softcap(Value x, double cap);

}  // namespace xlacel::models
