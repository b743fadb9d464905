// Granite: Llama with its multipliers: embeddings x embedding_multiplier, each block's residual
// add x residual_multiplier, scores x attention_multiplier, logits / logits_scaling.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& granite_architecture() {
  static const DecoderArchitecture architecture("granite", {"granite"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.embedding_scale = c.embedding_multiplier;
    f.logits.divisor = c.logits_scaling;
    f.layer = std::make_shared<PreNormLayer>(
        AttentionBlock({.scale = c.attention_multiplier.value_or(1.0)}),  // GraniteConfig's default
        gated_feed_forward(c, Activation::kSilu), c.residual_multiplier);
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
