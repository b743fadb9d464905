// Cohere (Command-R, Aya): CohereLayerNorm (no bias), attention and MLP in parallel off the one
// input norm, RoPE on interleaved pairs, logits x logit_scale.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& cohere_architecture() {
  static const DecoderArchitecture architecture(
      "cohere", {"cohere", "command-r"}, [](const ModelConfig& c) {
        DecoderFamily f;
        f.norm = NormKind::kCohere;
        f.logits.multiplier = c.logit_scale;
        f.layer = std::make_shared<ParallelLayer>(AttentionBlock({.interleaved_rope = true}),
                                                  gated_feed_forward(c, Activation::kSilu));
        return f;
      });
  return architecture;
}

}  // namespace xlacel::models
