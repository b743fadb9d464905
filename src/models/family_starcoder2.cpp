// Starcoder2: LayerNorms with bias, biases on every linear (config.linear_bias), a non-gated
// GELU MLP (c_fc, c_proj) and its sliding_window on every layer.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& starcoder2_architecture() {
  static const DecoderArchitecture architecture(
      "starcoder2", {"starcoder2"}, [](const ModelConfig& c) {
        DecoderFamily f;
        f.norm = NormKind::kLayerNorm;
        // Starcoder2Config's hidden_act is gelu_pytorch_tanh (the only one its checkpoints use).
        f.layer = std::make_shared<PreNormLayer>(
            AttentionBlock({.sliding_window = true}),
            feed_forward_for(c, Activation::kGeluTanh,
                             std::make_shared<DenseMlp>(Activation::kGeluTanh)));
        return f;
      });
  return architecture;
}

}  // namespace xlacel::models
