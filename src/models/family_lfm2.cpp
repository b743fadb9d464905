// LFM2 (Liquid AI): pre-norm layers whose mixer is a gated short convolution on most layers and
// attention with per-head q/k RMSNorms on the rest (config.layer_types), a SwiGLU MLP under
// feed_forward.w1/w3/w2, the final norm named embedding_norm, and a tied head.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& lfm2_architecture() {
  static const DecoderArchitecture architecture("lfm2", {"lfm2"}, [](const ModelConfig& c) {
    DecoderFamily f;
    f.final_norm_hf = "model.embedding_norm.weight";
    f.final_norm_gguf = "token_embd_norm.weight";
    AttentionBlock attention(
        {.qk_norm = QkNorm::kPerHead,
         .names = {.output = "out_proj", .q_norm = "q_layernorm", .k_norm = "k_layernorm"}});
    f.layer = std::make_shared<ShortConvOrAttentionLayer>(
        attention,
        gated_feed_forward(c, Activation::kSilu,
                           {.block = "feed_forward", .gate = "w1", .up = "w3", .down = "w2"}));
    return f;
  });
  return architecture;
}

}  // namespace xlacel::models
