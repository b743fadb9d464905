#pragma once
// Mamba-2's mixer (transformers' GraniteMoeHybridMambaLayer, the Bamba mixer) in place of
// attention on a hybrid's Mamba layers (Granite 4.0-H). One input projection gives the gate z,
// the convolution's channels (x, B, C) and a time step per head; the channels go through a
// causal depthwise convolution and SiLU; then each head's state h [head_dim, state] runs the
// selective scan h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T, y_t = h_t C_t + D x_t; y gated by
// SiLU(z) goes through an RMSNorm per group and the output projection.
//
// Its state is two caches: the convolution's recent inputs (conv_cache_<L>, a ring by position as
// LFM2's, CacheAccess::recent_inputs) and the scan's h after each sequence's newest position
// (ssm_cache_<L>, CacheAccess::state_before). A call computes its rows of a sequence in one
// piece, in the scan's chunked ("SSD") form: the rows' log-decays summed by position, then
// within the rows a causal matrix exp(cum_t - cum_s) dt_s (C_t . B_s) (attention-like) applied to
// x, plus the state before the rows decayed to each row; and the state after the last real row.
// Decode is that form with one row: the one-step recurrence.
#include <cstdint>
#include <vector>

#include "models/decoder_graph.h"
#include "models/decoder_weights.h"
#include "models/graph_signature.h"

namespace xlacel::models {

class Mamba2Block {
 public:
  // l<L>_ssm_in_proj [2 inner + 2 groups state + heads, hidden], _ssm_conv_weight [channels,
  // taps] (+ _ssm_conv_bias), _ssm_dt_bias, _ssm_a (A = -exp(A_log)), _ssm_d [heads], _ssm_norm
  // [inner], _ssm_out_proj [hidden, inner] (+ projection biases where config.ssm_proj_bias);
  // HF model.layers.L.mamba.*, GGUF blk.L.ssm_*. Replicated under tensor parallelism.
  void add_weights(DecoderWeights& weights, int64_t layer) const;
  // conv_cache_<L> [slots, 1, taps, channels] and ssm_cache_<L> [slots, 1, 2, heads x head_dim x
  // state], replicated as the weights are.
  void add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config, int64_t layer,
                  stablehlo::ElementType element, int64_t slots) const;
  // x f32 [T, hidden] (normed) -> the output projection's f32 [T, hidden].
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const;
};

}  // namespace xlacel::models
