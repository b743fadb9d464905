#pragma once
// One decoder layer: how it wires its attention and feed-forward blocks, its norms and its
// residual adds. Each wiring is a small file:
//   pre_norm_layer.cpp       h += attn(norm(h)); h += ffn(norm(h))       (Llama, most families)
//   sandwich_norm_layer.cpp  norms before and after each block            (Gemma 2 and 3)
//   post_norm_layer.cpp      norms after each block only                  (OLMo 2)
//   parallel_layer.cpp       h += attn(x) + ffn(x), x = norm(h)           (Cohere)
//   short_conv_or_attention_layer.cpp
//                            pre-norm, a short convolution in place of attention on conv
//                            layers                                        (LFM2)
//   mamba_or_attention_layer.cpp
//                            pre-norm, Mamba-2 in place of attention on Mamba layers
//                                                                          (Granite 4.0-H)
// A new kind of layer (a recurrent mixer beside attention, say) is a new DecoderLayer, its
// state a cache of its own (add_caches).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/attention_block.h"
#include "models/decoder_graph.h"
#include "models/decoder_weights.h"
#include "models/feed_forward.h"
#include "models/mamba2_block.h"
#include "models/short_conv_block.h"

namespace xlacel::models {

class DecoderLayer {
 public:
  DecoderLayer(AttentionBlock attention, std::shared_ptr<const FeedForward> feed_forward)
      : attention_(std::move(attention)), feed_forward_(std::move(feed_forward)) {}
  virtual ~DecoderLayer() = default;

  const AttentionBlock& attention() const { return attention_; }
  // Layer `layer`'s weights in argument order: its norms and its blocks'.
  virtual void add_weights(DecoderWeights& weights, int64_t layer) const = 0;
  // Layer `layer`'s caches in argument order (Architecture::cache_specs): its attention's k and
  // v, unless the layer keeps another state.
  virtual void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                          stablehlo::ElementType element, int64_t slots, int64_t capacity) const {
    attention_.add_caches(caches, config, layer, element, slots, capacity);
  }
  // h f32 [T, hidden] -> the layer's output.
  virtual Value emit(DecoderGraph& graph, int64_t layer, Value h) const = 0;

 protected:
  AttentionBlock attention_;
  std::shared_ptr<const FeedForward> feed_forward_;
};

// h += s * attn(input_norm(h)); h += s * ffn(post_norm(h)), s = residual_scale (Granite's
// residual_multiplier); post_norm is HF post_attention_layernorm, GGUF `post_norm_gguf`
// (ffn_norm; gpt-oss's converter writes post_attention_norm).
class PreNormLayer final : public DecoderLayer {
 public:
  PreNormLayer(AttentionBlock attention, std::shared_ptr<const FeedForward> feed_forward,
               double residual_scale = 1.0, std::string post_norm_gguf = "ffn_norm.weight")
      : DecoderLayer(std::move(attention), std::move(feed_forward)),
        residual_scale_(residual_scale),
        post_norm_gguf_(std::move(post_norm_gguf)) {}
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;

 private:
  double residual_scale_;
  std::string post_norm_gguf_;
};

// h += attn_out_norm(attn(input_norm(h))); h += ffn_out_norm(ffn(post_norm(h))): Gemma's
// input_layernorm, post_attention_layernorm, pre_feedforward_layernorm and
// post_feedforward_layernorm.
class SandwichNormLayer final : public DecoderLayer {
 public:
  using DecoderLayer::DecoderLayer;
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;
};

// h += attn_out_norm(attn(h)); h += ffn_out_norm(ffn(h)): OLMo 2's post_attention_layernorm and
// post_feedforward_layernorm.
class PostNormLayer final : public DecoderLayer {
 public:
  using DecoderLayer::DecoderLayer;
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;
};

// x = input_norm(h); h = (h + attn(x)) + ffn(x): attention and MLP in parallel off one norm
// (Cohere).
class ParallelLayer final : public DecoderLayer {
 public:
  using DecoderLayer::DecoderLayer;
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;
};

// h += mixer(operator_norm(h)); h += ffn(ffn_norm(h)), the mixer a short convolution
// (short_conv_block.h) on the config's conv layers and attention on the others (LFM2); a conv
// layer's state is its conv cache instead of a KV cache.
class ShortConvOrAttentionLayer final : public DecoderLayer {
 public:
  using DecoderLayer::DecoderLayer;
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                  stablehlo::ElementType element, int64_t slots, int64_t capacity) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;

 private:
  ShortConvBlock conv_;
};

// h += s * mixer(input_norm(h)); h += s * ffn(post_norm(h)), the mixer Mamba-2
// (mamba2_block.h) on the config's Mamba layers and attention on the others, s the residual
// scale (Granite 4.0-H's residual_multiplier); a Mamba layer's state is its conv and SSM caches
// instead of a KV cache.
class MambaOrAttentionLayer final : public DecoderLayer {
 public:
  MambaOrAttentionLayer(AttentionBlock attention, std::shared_ptr<const FeedForward> feed_forward,
                        double residual_scale)
      : DecoderLayer(std::move(attention), std::move(feed_forward)),
        residual_scale_(residual_scale) {}
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                  stablehlo::ElementType element, int64_t slots, int64_t capacity) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value h) const override;

 private:
  Mamba2Block mamba_;
  double residual_scale_;
};

// The norms a layer's wiring declares, with their HF and GGUF names.
void add_input_norm(DecoderWeights& weights, int64_t layer);
void add_post_norm(DecoderWeights& weights, int64_t layer, const std::string& hf,
                   const std::string& gguf = "ffn_norm.weight");
void add_attn_out_norm(DecoderWeights& weights, int64_t layer);
void add_ffn_out_norm(DecoderWeights& weights, int64_t layer);

}  // namespace xlacel::models
