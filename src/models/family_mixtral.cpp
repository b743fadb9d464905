// Mixtral: Llama with a mixture of experts under HF's names block_sparse_moe.experts.E.w1 (gate),
// w3 (up), w2 (down).
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& mixtral_architecture() {
  static const DecoderArchitecture architecture("mixtral", {"mixtral"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.layer = std::make_shared<PreNormLayer>(
        AttentionBlock({}),
        gated_feed_forward(c, Activation::kSilu,
                           {.block = "block_sparse_moe", .gate = "w1", .up = "w3", .down = "w2"}));
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
