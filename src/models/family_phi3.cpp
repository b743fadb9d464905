// Phi-3: Llama with q/k/v in one tensor and gate/up in another (split on the host at load),
// partial rotary (from the config), and its sliding_window on every layer.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& phi3_architecture() {
  static const DecoderArchitecture architecture("phi3", {"phi3"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.layer = std::make_shared<PreNormLayer>(
        AttentionBlock({.fused_qkv = true, .sliding_window = true}),
        feed_forward_for(c, Activation::kSilu,
                         std::make_shared<GatedMlp>(Activation::kSilu, true)));
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
