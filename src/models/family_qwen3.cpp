// Qwen 3 and Qwen3-MoE: Llama with per-head q/k RMSNorms before RoPE.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

namespace {

DecoderFamily qwen3(const ModelConfig& c) {
  DecoderFamily f;
  f.layer = std::make_shared<PreNormLayer>(AttentionBlock({.qk_norm = QkNorm::kPerHead}),
                                           gated_feed_forward(c, Activation::kSilu));
  return f;
}

}  // namespace

const Architecture& qwen3_architecture() {
  static const DecoderArchitecture architecture("qwen3", {"qwen3"}, qwen3);
  return architecture;
}

const Architecture& qwen3_moe_architecture() {
  static const DecoderArchitecture architecture("qwen3_moe", {"qwen3_moe", "qwen3moe"}, qwen3);
  return architecture;
}

}  // namespace xlacel::models
