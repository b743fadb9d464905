#pragma once
// The one description of a model's shape that every later stage reads, built the same way from
// an HF config.json (+ generation_config.json) or from GGUF metadata.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_file.h"
#include "model_files/tensor.h"
#include "model_files/vision_config.h"

namespace xlacel {

class GgufFile;

struct RopeScaling {
  // kNone: plain RoPE. kLlama3: Llama-3.1 frequency smoothing (factor, low/high freq factors,
  // original context). kFrequencyFactors: per-frequency divisors stored as a GGUF tensor
  // (rope_freqs.weight), which is how llama.cpp stores llama3 scaling. kLinear: every frequency
  // divided by factor (position interpolation; Gemma 3's global layers).
  // kLongRope: Phi-3.5 / Phi-4's per-frequency divisors, short_factor for sequences up to
  // original_max_position_embeddings (long_factor past it: not run, see
  // ModelConfig::exact_positions), and cos/sin multiplied by attention_factor.
  // kYarn: YaRN (Qwen 2.5/3 long context, gpt-oss): each frequency blended between itself and
  // itself / factor by a linear ramp over the dims between the correction dims of beta_fast and
  // beta_slow rotations in the original context (floored and ceiled where `truncate`), and
  // cos/sin multiplied by attention_factor (0.1 ln(factor) + 1 unless given).
  enum class Type { kNone, kLlama3, kFrequencyFactors, kLinear, kLongRope, kYarn };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 1.0;
  int64_t original_max_position_embeddings = 0;
  std::vector<double> short_factor;
  double attention_factor = 1.0;  // cos/sin x this (LongRoPE, YaRN); 1 for the other types
  double beta_fast = 32.0, beta_slow = 1.0;  // kYarn
  bool truncate = true;                      // kYarn
};
const char* rope_scaling_name(RopeScaling::Type type);

// How an embedding pools its tokens' final hidden states (sentence-transformers' Pooling
// module; GGUF <arch>.pooling_type): their mean, the first token's, or the last token's (models
// trained with the embedding read at an end token, as Qwen3-Embedding).
enum class Pooling { kMean, kCls, kLast };
const char* pooling_name(Pooling pooling);  // "mean", "cls", "last"
std::optional<Pooling> parse_pooling(std::string_view name);

struct ModelConfig {
  // HF model_type or GGUF general.architecture, read for any model; whether xlacel can run it is
  // models::architecture_for's question.
  std::string architecture;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (Qwen2)
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  std::vector<int64_t> eos_token_ids;  // any of these ends generation
  // Embeddings' pooling: as the files say (a sentence-transformers directory's Pooling module, a
  // GGUF's pooling_type), else mean.
  Pooling pooling = Pooling::kMean;

  // Features of other families, read for any model (defaults: absent); which of them a family
  // uses is its architecture's choice (models/decoder_family.h). Family defaults that
  // transformers' config classes supply when config.json or the GGUF omits a value are filled
  // in here too (gemma2, gemma3_text), so both sources give the same config.
  std::optional<int64_t> sliding_window;  // keys older than this many positions are masked
  // Per layer "sliding_attention", "full_attention", "conv" or "mamba" (HF layer_types; LFM2's
  // full_attn_idxs; Granite 4.0-H's "mamba"/"attention"; in LFM2's and Granite 4.0-H's GGUFs a
  // layer with 0 kv heads is a conv or Mamba layer); empty: all full.
  std::vector<std::string> layer_types;
  // The causal depthwise convolution of a recurrent layer: each channel's last conv_kernel inputs
  // (LFM2: HF conv_L_cache, GGUF shortconv.l_cache; Mamba-2: mamba_d_conv, ssm.conv_kernel), with
  // a bias where conv_bias (LFM2: on its linears too).
  int64_t conv_kernel = 0;
  bool conv_bias = false;
  // Mamba-2 layers (Granite 4.0-H): ssm_heads heads of ssm_head_dim channels, each channel a
  // state of ssm_state values; B and C shared by the heads of each of ssm_groups groups; biases
  // on the in/out projections where ssm_proj_bias.
  int64_t ssm_heads = 0, ssm_head_dim = 0, ssm_state = 0, ssm_groups = 1;
  bool ssm_proj_bias = false;
  double rope_local_theta = 10000.0;              // RoPE base of sliding layers (Gemma 3)
  RopeScaling rope_local_scaling;                 // RoPE scaling of sliding layers (Gemma 3)
  std::optional<double> query_pre_attn_scalar;    // attention scale = this^-0.5 (Gemma)
  std::optional<double> attention_multiplier;     // attention scale (Granite)
  std::optional<double> attn_logit_softcapping;   // scores: cap * tanh(scores / cap) (Gemma 2)
  std::optional<double> final_logit_softcapping;  // logits: cap * tanh(logits / cap) (Gemma 2)
  double embedding_multiplier = 1.0;              // Granite
  double residual_multiplier = 1.0;               // Granite
  double logits_scaling = 1.0;                    // Granite: logits / logits_scaling
  // RoPE rotates the first rotary_dim dims of each head, the rest pass (HF partial_rotary_factor:
  // int(head_dim * factor); GGUF rope.dimension_count); 0: head_dim.
  int64_t rotary_dim = 0;
  // Layers whose q and k pass without RoPE (SmolLM3's NoPE layers: HF no_rope_layers[l] == 0,
  // every 4th layer in its GGUF); empty: every layer rotates.
  std::vector<bool> rope_skipped;
  bool linear_bias = false;  // o_proj and the MLP carry biases too (Starcoder2 use_bias)
  double logit_scale = 1.0;  // logits * logit_scale (Cohere)
  // Mixture of experts (0: a dense MLP): every layer's MLP is num_experts experts of
  // expert_intermediate_size, experts_per_token chosen per token by a softmax router, their
  // weights renormalised to sum 1 when norm_topk_prob.
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_intermediate_size = 0;
  bool norm_topk_prob = false;
  // A shared expert beside the mixture, run on every token (Granite 4.0-H's shared_mlp), of this
  // width; 0: none.
  int64_t shared_expert_intermediate_size = 0;
  // gpt-oss's experts: a clamped SwiGLU, (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g)
  // with g = min(gate, limit) (HF swiglu_alpha / swiglu_limit; llama.cpp's constants).
  double swiglu_alpha = 1.702, swiglu_limit = 7.0;

  // Q and K projection rows as llama.cpp's converter stores them for the families it permutes
  // (gguf_permutes_qk): each head's two rotated halves interleaved row by row. Used as stored, with
  // RoPE turning adjacent pairs: the same values as HF's rotate_half on HF's rows, in another order
  // within each head, which attention's dot products do not see. Set by config_from_gguf where
  // RoPE turns whole heads (with partial rotary the loader restores HF's rows instead).
  bool qk_rows_interleaved = false;

  // How the files store each tensor, by its name in the files (GGUF or HF); filled by
  // ModelFiles, so graphs of resident formats (WeightType::kAuto) follow from the config alone.
  std::map<std::string, DType> stored_types;

  int64_t rope_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  // The positions xlacel runs exactly as transformers: all of them, but with LongRoPE only up to
  // original_max_position_embeddings (past it transformers switches a forward's frequencies to
  // long_factor by that forward's length, which chunked prefill and batched decode do not see).
  int64_t exact_positions() const {
    return rope_scaling.type == RopeScaling::Type::kLongRope
               ? rope_scaling.original_max_position_embeddings
               : max_position_embeddings;
  }
  bool skips_rope(int64_t layer) const {
    return layer < static_cast<int64_t>(rope_skipped.size()) &&
           rope_skipped[static_cast<size_t>(layer)];
  }
  bool is_conv_layer(int64_t layer) const {
    return layer < static_cast<int64_t>(layer_types.size()) &&
           layer_types[static_cast<size_t>(layer)] == "conv";
  }
  bool is_mamba_layer(int64_t layer) const {
    return layer < static_cast<int64_t>(layer_types.size()) &&
           layer_types[static_cast<size_t>(layer)] == "mamba";
  }
  // A vision-language model's image encoder and projector (config.json's vision_config;
  // models/vision_tower.h); absent for text-only models. The decoder fields above are its
  // text_config's.
  std::optional<VisionConfig> vision;

  int64_t ssm_inner() const { return ssm_heads * ssm_head_dim; }
  bool is_sliding_layer(int64_t layer) const {
    return sliding_window.has_value() && layer < static_cast<int64_t>(layer_types.size()) &&
           layer_types[static_cast<size_t>(layer)] == "sliding_attention";
  }
};

// `generation_config` may be null (file absent); its eos list, when present, wins.
ModelConfig config_from_hf(const Json& config, const Json* generation_config,
                           const std::string& path);
ModelConfig config_from_gguf(const GgufFile& gguf);

// Whether llama.cpp's converter permutes the Q/K rows of this GGUF architecture: llama (Mistral's
// GGUFs are "llama" too) and Granite (its converter derives from Llama's); transformers' GGUF
// loader reverses it for llama and mistral.
bool gguf_permutes_qk(const std::string& architecture);

// Throws Error naming `where` when dims are inconsistent (heads not dividing, zero sizes...).
void validate_config(const ModelConfig& config, const std::string& where);

}  // namespace xlacel
