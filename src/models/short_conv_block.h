#pragma once
// LFM2's gated short convolution (transformers' Lfm2ShortConv) as a decoder layer's mixer, in
// place of attention on the config's conv layers: B, C and x are the three row blocks of one
// input projection; each channel's B * x at this position and the conv_kernel - 1 before it
// (kept in the layer's conv cache, CacheAccess::recent_inputs) goes through a depthwise causal
// convolution, gated by C, then the output projection. Its state is that ring of recent inputs
// instead of a KV cache.
#include <cstdint>
#include <vector>

#include "models/decoder_graph.h"
#include "models/decoder_weights.h"
#include "models/graph_signature.h"

namespace xlacel::models {

class ShortConvBlock {
 public:
  // l<L>_conv_in_proj [3 * hidden, hidden] (+ _conv_in_bias), _conv_weight [hidden, taps]
  // (+ _conv_bias), _conv_out_proj [hidden, hidden] (+ _conv_out_bias) where config.conv_bias;
  // HF model.layers.L.conv.{in_proj,conv,out_proj}, GGUF blk.L.shortconv.*.
  void add_weights(DecoderWeights& weights, int64_t layer) const;
  // conv_cache_<L> [slots, 1, taps, hidden]: the last taps inputs of each slot, a ring by
  // position (cache_access.h). Replicated under tensor parallelism, as the block's weights are.
  void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                  stablehlo::ElementType element, int64_t slots) const;
  // x f32 [T, hidden] (normed) -> the output projection's f32 [T, hidden].
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const;
};

}  // namespace xlacel::models
