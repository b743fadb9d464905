// Gemma 2 and 3: (1 + w) RMSNorms before and after attention and the MLP, embeddings scaled by
// sqrt(hidden), GeGLU (gelu_pytorch_tanh), scores scaled by query_pre_attn_scalar^-0.5, sliding
// layers per layer_types. Gemma 3 adds per-head q/k norms and sliding layers' own RoPE base;
// Gemma 2 soft-caps attention scores and the final logits.
#include <cmath>

#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

namespace {

DecoderFamily gemma(const ModelConfig& c, AttentionOptions attention) {
  DecoderFamily f;
  f.norm = NormKind::kRmsOnePlus;
  f.gguf_norms_minus_one = true;
  // Gemma*ScaledWordEmbedding: torch.tensor(hidden_size**0.5), a float32 scalar.
  f.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  attention.sliding_window = true;
  attention.scale = std::pow(c.query_pre_attn_scalar.value_or(256.0), -0.5);
  f.layer = std::make_shared<SandwichNormLayer>(AttentionBlock(attention),
                                                gated_feed_forward(c, Activation::kGeluTanh));
  return f;
}

}  // namespace

const Architecture& gemma3_architecture() {
  static const DecoderArchitecture architecture(
      "gemma3", {"gemma3", "gemma3_text"}, [](const ModelConfig& c) {
        return gemma(c, {.qk_norm = QkNorm::kPerHead, .local_rope = true});
      });
  return architecture;
}

const Architecture& gemma2_architecture() {
  static const DecoderArchitecture architecture("gemma2", {"gemma2"}, [](const ModelConfig& c) {
    DecoderFamily f = gemma(c, {.softcap = c.attn_logit_softcapping});
    f.logits.softcap = c.final_logit_softcapping;
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
