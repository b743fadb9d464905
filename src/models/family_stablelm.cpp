// StableLM 2: Llama with LayerNorms (weight and bias), q/k/v biases and partial rotary (both
// from the config).
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& stablelm_architecture() {
  static const DecoderArchitecture architecture("stablelm", {"stablelm"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.norm = NormKind::kLayerNorm;
    f.layer = std::make_shared<PreNormLayer>(AttentionBlock({}),
                                             gated_feed_forward(c, Activation::kSilu));
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
