// Llama, and the families that are Llama in the graph: Mistral, Qwen 2 (q/k/v biases where
// config.attention_bias) and SmolLM3 (RoPE skipped on the layers the config says:
// ModelConfig::rope_skipped); a GGUF "llama" with experts is Mixtral.
#include "models/decoder_architecture.h"
#include "models/decoder_layer.h"
#include "models/families.h"

namespace xlacel::models {

const Architecture& llama_architecture() {
  static const DecoderArchitecture architecture(
      "llama", {"llama", "mistral", "qwen2", "smollm3"}, [](const ModelConfig& c) {
        DecoderFamily f;
        f.layer = std::make_shared<PreNormLayer>(AttentionBlock({}),
                                                 gated_feed_forward(c, Activation::kSilu));
        return f;
      });
  return architecture;
}

}  // namespace xlacel::models
