#pragma once
// What a decoder family is made of: how its norms compute, the layer it stacks (decoder_layer.h:
// how a layer wires its attention and feed-forward blocks and norms), and the few scalars around
// the stack (embedding scale, logit transforms). A family is a function from its config to a
// DecoderFamily, in its own family_<name>.cpp; the graph context (decoder_graph.h) and the weight
// list (decoder_weights.h) are written once for all of them.
#include <memory>
#include <optional>
#include <string>

#include "model_files/model_config.h"

namespace xlacel::models {

class DecoderLayer;

enum class NormKind {
  kRms,         // w * x_hat (LlamaRMSNorm)
  kRmsOnePlus,  // (1 + w) * x_hat, 1 + w in f32 (GemmaRMSNorm)
  kLayerNorm,   // nn.LayerNorm: mean-centred, weight and bias <norm>_bias (StableLM, Starcoder2)
  kCohere,      // CohereLayerNorm: w * ((x - mean) * rsqrt(var + eps)), no bias
};

// What the logits go through before the argmax, in this order.
struct LogitTransform {
  double divisor = 1.0;           // logits / divisor (Granite logits_scaling)
  double multiplier = 1.0;        // logits * multiplier (Cohere logit_scale)
  std::optional<double> softcap;  // cap * tanh(logits / cap) (Gemma 2)
  bool any() const { return divisor != 1.0 || multiplier != 1.0 || softcap.has_value(); }
};

struct DecoderFamily {
  NormKind norm = NormKind::kRms;  // every norm but q/k norms (those are RMSNorms of this weight)
  // llama.cpp stores (1 + w) norm weights as 1 + w; transformers' GGUF loader subtracts 1
  // (Gemma2TensorProcessor), and so do we, in f32.
  bool gguf_norms_minus_one = false;
  double embedding_scale = 1.0;  // embeddings * f32(scale) (Gemma: sqrt(hidden); Granite)
  // The final norm's HF and GGUF names (LFM2: model.embedding_norm, token_embd_norm).
  std::string final_norm_hf = "model.norm.weight";
  std::string final_norm_gguf = "output_norm.weight";
  LogitTransform logits;
  std::shared_ptr<const DecoderLayer> layer;  // every layer's kind
};

}  // namespace xlacel::models
