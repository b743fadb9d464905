// gpt-oss (OpenAI): Llama's pre-norm layers with biases on q/k/v/o, a learned sink logit per head
// in attention's softmax, sliding (128) and full attention alternating, YaRN RoPE, and a mixture
// of experts with a biased router and clamped SwiGLU experts (gpt_oss_moe.cpp).
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& gpt_oss_architecture() {
  static const DecoderArchitecture architecture(
      "gpt_oss", {"gpt_oss", "gpt-oss"}, [](const ModelConfig&) {
        DecoderFamily f;
        f.layer = std::make_shared<PreNormLayer>(
            AttentionBlock({.sliding_window = true, .sinks = true}), std::make_shared<GptOssMoe>(),
            1.0, "post_attention_norm.weight");
        return f;
      });
  return architecture;
}

}  // namespace xlacel::models
