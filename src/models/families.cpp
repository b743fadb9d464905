#include "models/families.h"

#include <cmath>

#include "models/decoder_architecture.h"

namespace xlacel::models {

namespace {

// Gemma 2 and 3: (1 + w) RMSNorms before and after attention and the MLP, embeddings scaled by
// sqrt(hidden), GeGLU (gelu_pytorch_tanh), scores scaled by query_pre_attn_scalar^-0.5, sliding
// layers per layer_types.
DecoderFamily gemma(const ModelConfig& c) {
  DecoderFamily f;
  f.norm_weight = NormWeight::kOnePlus;
  f.attn_out_norm = true;
  f.ffn_in_norm_hf = "pre_feedforward_layernorm";
  f.ffn_out_norm = true;
  f.activation = Activation::kGeluTanh;
  f.sliding_window = true;
  f.gguf_norms_minus_one = true;
  // Gemma*ScaledWordEmbedding: torch.tensor(hidden_size**0.5), a float32 scalar.
  f.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  f.attention_scale = std::pow(c.query_pre_attn_scalar.value_or(256.0), -0.5);
  return f;
}

// Qwen 3 (and Qwen3-MoE): per-head q/k RMSNorm.
DecoderFamily qwen3(const ModelConfig&) {
  DecoderFamily f;
  f.qk_norm = QkNorm::kPerHead;
  return f;
}

}  // namespace

const Architecture& qwen3_architecture() {
  static const DecoderArchitecture architecture("qwen3", {"qwen3"}, qwen3);
  return architecture;
}

const Architecture& gemma3_architecture() {
  static const DecoderArchitecture architecture("gemma3", {"gemma3", "gemma3_text"},
                                                [](const ModelConfig& c) {
                                                  DecoderFamily f = gemma(c);
                                                  f.qk_norm = QkNorm::kPerHead;
                                                  f.local_rope = true;
                                                  return f;
                                                });
  return architecture;
}

const Architecture& gemma2_architecture() {
  static const DecoderArchitecture architecture("gemma2", {"gemma2"}, [](const ModelConfig& c) {
    DecoderFamily f = gemma(c);
    f.attention_softcap = c.attn_logit_softcapping;
    f.final_softcap = c.final_logit_softcapping;
    return f;
  });
  return architecture;
}

const Architecture& granite_architecture() {
  static const DecoderArchitecture architecture("granite", {"granite"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.embedding_scale = c.embedding_multiplier;
    f.residual_scale = c.residual_multiplier;
    f.attention_scale = c.attention_multiplier.value_or(1.0);  // GraniteConfig's default
    f.logits_divisor = c.logits_scaling;
    return f;
  });
  return architecture;
}

const Architecture& olmo2_architecture() {
  static const DecoderArchitecture architecture("olmo2", {"olmo2"}, [](const ModelConfig&) {
    DecoderFamily f;
    f.input_norm = false;
    f.attn_out_norm = true;
    f.ffn_in_norm = false;
    f.ffn_out_norm = true;
    f.qk_norm = QkNorm::kAcrossHeads;
    return f;
  });
  return architecture;
}

const Architecture& phi3_architecture() {
  static const DecoderArchitecture architecture("phi3", {"phi3"}, [](const ModelConfig&) {
    DecoderFamily f;
    f.fused_qkv = true;
    f.fused_gate_up = true;
    f.sliding_window = true;  // every layer, when the config has a window
    return f;
  });
  return architecture;
}

const Architecture& stablelm_architecture() {
  static const DecoderArchitecture architecture("stablelm", {"stablelm"}, [](const ModelConfig&) {
    DecoderFamily f;
    f.layer_norm = true;
    return f;
  });
  return architecture;
}

const Architecture& starcoder2_architecture() {
  static const DecoderArchitecture architecture(
      "starcoder2", {"starcoder2"}, [](const ModelConfig& c) {
        DecoderFamily f;
        f.layer_norm = true;
        f.gated_mlp = false;
        // Starcoder2Config's hidden_act is gelu_pytorch_tanh (the only one its checkpoints use).
        f.activation = Activation::kGeluTanh;
        f.sliding_window = true;  // every layer, when the config has a window
        (void)c;
        return f;
      });
  return architecture;
}

const Architecture& cohere_architecture() {
  static const DecoderArchitecture architecture("cohere", {"cohere", "command-r"},
                                                [](const ModelConfig& c) {
                                                  DecoderFamily f;
                                                  f.cohere_norm = true;
                                                  f.parallel_block = true;
                                                  f.ffn_in_norm = false;
                                                  f.interleaved_rope = true;
                                                  f.logits_multiplier = c.logit_scale;
                                                  return f;
                                                });
  return architecture;
}

// Mixtures of experts: a decoder above with a sparse MLP (config.num_experts experts).
const Architecture& qwen3_moe_architecture() {
  static const DecoderArchitecture architecture("qwen3_moe", {"qwen3_moe", "qwen3moe"}, qwen3);
  return architecture;
}

const Architecture& olmoe_architecture() {
  // Llama's norms with q/k RMSNorm across heads.
  static const DecoderArchitecture architecture("olmoe", {"olmoe"}, [](const ModelConfig&) {
    DecoderFamily f;
    f.qk_norm = QkNorm::kAcrossHeads;
    return f;
  });
  return architecture;
}

const Architecture& mixtral_architecture() {
  static const DecoderArchitecture architecture("mixtral", {"mixtral"}, [](const ModelConfig&) {
    DecoderFamily f;
    f.moe_hf = "block_sparse_moe";
    f.expert_gate_hf = "w1";
    f.expert_up_hf = "w3";
    f.expert_down_hf = "w2";
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
