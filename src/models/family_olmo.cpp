// OLMo 2 (norms after attention and the MLP only) and OLMoE (Llama's norms with experts), both
// with an RMSNorm of the whole q and k projections before RoPE.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& olmo2_architecture() {
  static const DecoderArchitecture architecture("olmo2", {"olmo2"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.layer = std::make_shared<PostNormLayer>(AttentionBlock({.qk_norm = QkNorm::kAcrossHeads}),
                                              gated_feed_forward(c, Activation::kSilu));
    return f;
  });
  return architecture;
}

const Architecture& olmoe_architecture() {
  static const DecoderArchitecture architecture("olmoe", {"olmoe"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.layer = std::make_shared<PreNormLayer>(AttentionBlock({.qk_norm = QkNorm::kAcrossHeads}),
                                             gated_feed_forward(c, Activation::kSilu));
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
