#pragma once
// What sets one Llama-like decoder family apart from another: which norms a layer has and where,
// how norm weights apply, q/k norms, the MLP's activation, sliding-window layers, and the scalar
// multipliers of embeddings, residuals, attention scores and logits. The decoder graph
// (llama_graph.h) and the weight list (weight_layout.h) are written once over this; a family is
// a function from its config to a DecoderFamily (families.cpp).
#include <optional>
#include <string>

#include "model_files/model_config.h"
#include "models/llama_layers.h"

namespace xlacel::models {

enum class NormWeight {
  kScale,    // w * x_hat (LlamaRMSNorm)
  kOnePlus,  // (1 + w) * x_hat, 1 + w in f32 (GemmaRMSNorm)
};

enum class QkNorm {
  kNone,
  kPerHead,      // RMSNorm of each head's q/k over head_dim, before RoPE (Qwen 3, Gemma 3)
  kAcrossHeads,  // RMSNorm of the whole q/k projection (heads * head_dim), before RoPE (OLMo 2)
};

struct DecoderFamily {
  NormWeight norm_weight = NormWeight::kScale;
  // A layer: h += [attn_out_norm](attention([input_norm](h)));
  //          h += [ffn_out_norm](mlp([ffn_in_norm](h))); residual adds scaled by residual_scale.
  bool input_norm = true;      // input_layernorm
  bool attn_out_norm = false;  // post_attention_layernorm of Gemma and OLMo 2
  bool ffn_in_norm = true;     // HF name: ffn_in_norm_hf
  std::string ffn_in_norm_hf = "post_attention_layernorm";  // Gemma: pre_feedforward_layernorm
  bool ffn_out_norm = false;                                // post_feedforward_layernorm
  QkNorm qk_norm = QkNorm::kNone;
  // nn.LayerNorm (mean-centred, weight and bias: arguments <norm> and <norm>_bias) instead of
  // RMSNorm for every norm but q/k norms (StableLM, Starcoder2).
  bool layer_norm = false;
  Activation activation = Activation::kSilu;
  // down(act(gate(x)) * up(x)); false: down(act(up(x))) with HF names mlp.c_fc / mlp.c_proj
  // (Starcoder2).
  bool gated_mlp = true;
  // One HF/GGUF tensor holds q, k and v rows (self_attn.qkv_proj, attn_qkv), or gate and up rows
  // (mlp.gate_up_proj, ffn_up); the loader splits them (Phi-3).
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // Cohere: LayerNorm without bias computed as w * ((x - mean) * rsqrt(var + eps)); attention
  // and MLP in parallel off the one input norm (h + attn + mlp); RoPE on interleaved pairs.
  bool cohere_norm = false;
  bool parallel_block = false;
  bool interleaved_rope = false;
  // Mixture of experts (config.num_experts > 0): the router is <moe_hf>.gate.weight (GGUF
  // ffn_gate_inp), expert E's MLP <moe_hf>.experts.E.<expert_*_hf>.weight (GGUF rows of the
  // stacked ffn_{gate,up,down}_exps).
  std::string moe_hf = "mlp";
  std::string expert_gate_hf = "gate_proj";
  std::string expert_up_hf = "up_proj";
  std::string expert_down_hf = "down_proj";
  // Layers the config marks "sliding_attention" mask keys older than config.sliding_window.
  bool sliding_window = false;
  // Sliding layers take their RoPE frequencies from rope_local_theta / rope_local_scaling
  // (weight rope_local_inv_freq).
  bool local_rope = false;
  // llama.cpp stores these norm weights as 1 + w; transformers' GGUF loader subtracts 1
  // (Gemma2TensorProcessor), and so do we, in f32.
  bool gguf_norms_minus_one = false;

  double embedding_scale = 1.0;  // embeddings * f32(scale) (Gemma: sqrt(hidden); Granite)
  double residual_scale = 1.0;   // h = h + f32(scale) * block(h) (Granite)
  double attention_scale = 0;    // scores * scale; 0: 1/sqrt(head_dim)
  std::optional<double> attention_softcap;  // Gemma 2
  std::optional<double> final_softcap;      // Gemma 2
  double logits_divisor = 1.0;              // logits / divisor (Granite)
  double logits_multiplier = 1.0;           // logits * multiplier (Cohere logit_scale)
};

}  // namespace xlacel::models
