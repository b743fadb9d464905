// Granite 4.0-H (GraniteMoeHybrid): Granite's multipliers (embeddings x embedding_multiplier,
// each block's residual add x residual_multiplier, scores x attention_multiplier, logits /
// logits_scaling) over pre-norm layers whose mixer is Mamba-2 on most layers and attention
// without RoPE on the rest, and a shared MLP beside a mixture of experts (or alone: the dense
// variant).
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& granite_hybrid_architecture() {
  static const DecoderArchitecture architecture(
      "granitemoehybrid", {"granitemoehybrid", "granitehybrid"}, [](const ModelConfig& c) {
        DecoderFamily f;
        f.embedding_scale = c.embedding_multiplier;
        f.logits.divisor = c.logits_scaling;
        f.layer = std::make_shared<MambaOrAttentionLayer>(
            AttentionBlock({.scale = c.attention_multiplier.value_or(1.0)}),
            std::make_shared<SharedMlpAndExperts>(), c.residual_multiplier);
        return f;
      });
  return architecture;
}

}  // namespace xlacel::models
