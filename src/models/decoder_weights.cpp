#include "models/decoder_weights.h"

#include <fmt/format.h>

#include "models/decoder_layer.h"

namespace xlacel::models {

DecoderWeights::DecoderWeights(const ModelConfig& config, const DecoderFamily& family,
                               WeightType weights)
    : config_(config),
      element_(element_of(weights)),
      norm_add_(family.gguf_norms_minus_one ? -1.0f : 0.0f),
      norm_bias_(family.norm == NormKind::kLayerNorm) {}

WeightSpec& DecoderWeights::add(std::string name, std::string hf, std::string gguf,
                                std::vector<int64_t> shape, Split split) {
  specs_.push_back({std::move(name), std::move(hf), std::move(gguf), std::move(shape), element_});
  specs_.back().split = split;
  return specs_.back();
}

WeightSpec& DecoderWeights::add_layer(int64_t layer, const std::string& name, const std::string& hf,
                                      const std::string& gguf, std::vector<int64_t> shape,
                                      Split split) {
  return add(fmt::format("l{}_{}", layer, name), fmt::format("model.layers.{}.{}", layer, hf),
             fmt::format("blk.{}.{}", layer, gguf), std::move(shape), split);
}

WeightSpec& DecoderWeights::add_layer_experts(int64_t layer, const std::string& name,
                                              const std::string& hf, const std::string& gguf,
                                              const std::vector<int64_t>& shape, Split split) {
  std::vector<int64_t> stacked = {config_.num_experts};
  stacked.insert(stacked.end(), shape.begin(), shape.end());
  WeightSpec& spec = add_layer(layer, name, hf, gguf, std::move(stacked), split);
  spec.expert = true;
  spec.hf_experts = config_.num_experts;
  return spec;
}

void DecoderWeights::add_layer_rows(int64_t layer, const std::string& name, const std::string& hf,
                                    const std::string& gguf, int64_t row, int64_t rows,
                                    int64_t total, Split split) {
  WeightSpec& spec = add_layer(layer, name, hf, gguf, {rows, config_.hidden_size}, split);
  spec.set_rows(row, total);
}

void DecoderWeights::add_norm(const std::string& name, const std::string& hf,
                              const std::string& gguf, int64_t size) {
  add(name, hf, gguf, {size}).gguf_add = norm_add_;
  if (norm_bias_) {
    auto bias = [](const std::string& weight) {
      return weight.substr(0, weight.size() - std::string(".weight").size()) + ".bias";
    };
    add(name + "_bias", bias(hf), bias(gguf), {size});
  }
}

void DecoderWeights::add_layer_norm(int64_t layer, const std::string& name, const std::string& hf,
                                    const std::string& gguf, int64_t size) {
  add_norm(fmt::format("l{}_{}", layer, name), fmt::format("model.layers.{}.{}", layer, hf),
           fmt::format("blk.{}.{}", layer, gguf), size);
}

void DecoderWeights::add_layer_qk_norm(int64_t layer, const std::string& name,
                                       const std::string& hf, const std::string& gguf,
                                       int64_t size) {
  add_layer(layer, name, hf, gguf, {size}).gguf_add = norm_add_;
}

std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& c, const DecoderFamily& family,
                                             WeightType weights) {
  DecoderWeights list(c, family, weights);
  // RoPE frequencies, computed on the host (weight_loader.h): f32 whatever the weights are.
  auto add_frequencies = [&](const char* name, bool local) {
    WeightSpec& spec = list.add(name, "", "", {c.rope_dims() / 2});
    spec.element = stablehlo::ElementType::kF32;
    spec.rope_inv_freq = true;
    spec.rope_local = local;
  };
  add_frequencies("rope_inv_freq", false);
  if (family.layer->attention().options().local_rope) add_frequencies("rope_local_inv_freq", true);
  // Tensor parallelism cuts the vocabulary: each device looks up (and, tied, scores) its rows.
  list.add("embed_tokens", "model.embed_tokens.weight", "token_embd.weight",
           {c.vocab_size, c.hidden_size}, Split::kOutputs);
  for (int64_t layer = 0; layer < c.num_layers; ++layer) family.layer->add_weights(list, layer);
  list.add_norm("final_norm", family.final_norm_hf, family.final_norm_gguf, c.hidden_size);
  if (!c.tie_word_embeddings) {
    list.add("lm_head", "lm_head.weight", "output.weight", {c.vocab_size, c.hidden_size},
             Split::kOutputs);
  }
  return resident_weight_specs(c, list.take(), weights);
}

}  // namespace xlacel::models
