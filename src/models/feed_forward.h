#pragma once
// A decoder layer's feed-forward block: a gated MLP (gated_mlp.cpp), a plain two-matrix MLP
// (dense_mlp.cpp), a sparse mixture of experts (sparse_moe.cpp, gpt_oss_moe.cpp) or a shared MLP
// beside one (shared_mlp_and_experts.cpp). Each declares its weights and
// emits itself; a family picks one (feed_forward_for: experts where the config has them).
#include <cstdint>
#include <memory>
#include <string>

#include "models/decoder_graph.h"
#include "models/decoder_weights.h"

namespace xlacel::models {

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  virtual void add_weights(DecoderWeights& weights, int64_t layer) const = 0;
  // x f32 [T, hidden] (normed) -> f32 [T, hidden].
  virtual Value emit(DecoderGraph& graph, int64_t layer, Value x) const = 0;
};

// HF names of an MLP's matrices: <block>.<gate|up|down>.weight; in a mixture, the router is
// <block>.gate.weight (GGUF ffn_gate_inp) and expert E's matrices
// <block>.experts.E.<gate|up|down>.weight (GGUF: the stacked ffn_{gate,up,down}_exps).
struct MlpNames {
  std::string block = "mlp";
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
};

// down(act(gate(x)) * up(x)): l<L>_gate_proj, _up_proj (rows of one mlp.gate_up_proj tensor,
// GGUF ffn_up, where fused: Phi-3), _down_proj; HF names as `names` say.
class GatedMlp final : public FeedForward {
 public:
  GatedMlp(Activation activation, bool fused_gate_up, MlpNames names = {})
      : activation_(activation), fused_gate_up_(fused_gate_up), names_(std::move(names)) {}
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const override;

 private:
  Activation activation_;
  bool fused_gate_up_;
  MlpNames names_;
};

// down(act(up(x) + up_bias)) + down_bias, HF mlp.c_fc / mlp.c_proj, biases where
// config.linear_bias (Starcoder2).
class DenseMlp final : public FeedForward {
 public:
  explicit DenseMlp(Activation activation) : activation_(activation) {}
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const override;

 private:
  Activation activation_;
};

// config.num_experts experts of gated MLPs, config.experts_per_token chosen per token
// (llama_layers.h, mixture_of_experts): l<L>_router, then the experts' l<L>_gate_proj, _up_proj,
// _down_proj, each stacked [E, rows, cols].
class SparseMoe final : public FeedForward {
 public:
  SparseMoe(Activation activation, MlpNames names)
      : activation_(activation), names_(std::move(names)) {}
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const override;

 private:
  Activation activation_;
  MlpNames names_;
};

// gpt-oss's mixture (GptOssMLP): a router with a bias whose top config.experts_per_token logits
// get their own softmax, and experts with biases and the clamped SwiGLU (ModelConfig::
// swiglu_alpha, swiglu_limit): l<L>_router (+ _router_bias), then the experts' l<L>_gate_proj,
// _gate_bias [E, inter], _up_proj, _up_bias, _down_proj, _down_bias [E, hidden]. HF stacks the
// experts (mlp.experts.gate_up_proj [E, hidden, 2 inter], gate and up interleaved by column,
// stored as x @ W; down_proj [E, inter, hidden]; their biases [E, ...]); GGUF as
// ffn_{gate,up,down}_exps.{weight,bias}.
class GptOssMoe final : public FeedForward {
 public:
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const override;
};

// Granite 4.0-H's feed-forward block (GraniteMoeHybrid): a shared gated MLP on every token
// (shared_mlp, gate and up the two row halves of input_linear in HF; GGUF ffn_{gate,up,down},
// or ffn_*_shexp beside experts), plus, where the config has experts, a mixture whose router
// takes the top config.experts_per_token logits and their own softmax (block_sparse_moe: router
// .layer, and each expert's gate and up the halves of its rows of the stacked input_linear [E,
// 2 inter, hidden], down its output_linear [E, hidden, inter]; GGUF ffn_gate_inp and the stacked
// ffn_*_exps): l<L>_shared_gate_proj, _shared_up_proj, _shared_down_proj, then l<L>_router and
// the experts' l<L>_gate_proj, _up_proj, _down_proj, stacked.
class SharedMlpAndExperts final : public FeedForward {
 public:
  void add_weights(DecoderWeights& weights, int64_t layer) const override;
  Value emit(DecoderGraph& graph, int64_t layer, Value x) const override;
};

// Layer `layer`'s experts as the mixture's blocks declare them: l<L>_gate_proj, _up_proj,
// _down_proj, and with `biases` _gate_bias, _up_bias, _down_bias, each stacked.
Experts layer_experts(DecoderGraph& graph, int64_t layer, bool biases);

// A mixture where the config has experts (GGUF Mixtral is a "llama" with expert_count), else
// `dense`.
std::shared_ptr<const FeedForward> feed_forward_for(const ModelConfig& config,
                                                    Activation activation,
                                                    std::shared_ptr<const FeedForward> dense,
                                                    MlpNames names = {});

// The common case: experts where the config has them, else a gated MLP of `activation` with
// gate and up in tensors of their own.
std::shared_ptr<const FeedForward> gated_feed_forward(const ModelConfig& config,
                                                      Activation activation, MlpNames names = {});

}  // namespace xlacel::models
