#include "models/weight_layout.h"

#include <fmt/format.h>

namespace xlacel::models {

using stablehlo::ElementType;

ElementType element_of(WeightType type) {
  switch (type) {
    case WeightType::kF32:
      return ElementType::kF32;
    case WeightType::kBF16:
      return ElementType::kBF16;
    case WeightType::kF16:
      return ElementType::kF16;
  }
  return ElementType::kF32;
}

ElementType cache_element(WeightType weights) {
  return element_of(weights);
}

std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& c, const DecoderFamily& family,
                                             WeightType weights) {
  const ElementType e = element_of(weights);
  const int64_t q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim;
  const float norm_add = family.gguf_norms_minus_one ? -1.0f : 0.0f;
  std::vector<WeightSpec> specs;
  specs.push_back({"rope_inv_freq", "", "", {c.head_dim / 2}, ElementType::kF32, true});
  if (family.local_rope) {
    specs.push_back(
        {"rope_local_inv_freq", "", "", {c.head_dim / 2}, ElementType::kF32, true, true});
  }
  specs.push_back({"embed_tokens",
                   "model.embed_tokens.weight",
                   "token_embd.weight",
                   {c.vocab_size, c.hidden_size},
                   e});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    auto add = [&](std::string name, std::string hf, std::string gguf, std::vector<int64_t> shape) {
      specs.push_back({fmt::format("l{}_{}", l, name), fmt::format("model.layers.{}.{}", l, hf),
                       fmt::format("blk.{}.{}", l, gguf), std::move(shape), e});
    };
    auto add_norm = [&](std::string name, std::string hf, std::string gguf, int64_t size) {
      add(std::move(name), std::move(hf), std::move(gguf), {size});
      specs.back().gguf_add = norm_add;
    };
    if (family.input_norm) {
      add_norm("input_norm", "input_layernorm.weight", "attn_norm.weight", c.hidden_size);
    }
    add("q_proj", "self_attn.q_proj.weight", "attn_q.weight", {q_dim, c.hidden_size});
    if (c.attention_bias) add("q_bias", "self_attn.q_proj.bias", "attn_q.bias", {q_dim});
    add("k_proj", "self_attn.k_proj.weight", "attn_k.weight", {kv_dim, c.hidden_size});
    if (c.attention_bias) add("k_bias", "self_attn.k_proj.bias", "attn_k.bias", {kv_dim});
    if (family.qk_norm != QkNorm::kNone) {
      const bool per_head = family.qk_norm == QkNorm::kPerHead;
      add_norm("q_norm", "self_attn.q_norm.weight", "attn_q_norm.weight",
               per_head ? c.head_dim : q_dim);
      add_norm("k_norm", "self_attn.k_norm.weight", "attn_k_norm.weight",
               per_head ? c.head_dim : kv_dim);
    }
    add("v_proj", "self_attn.v_proj.weight", "attn_v.weight", {kv_dim, c.hidden_size});
    if (c.attention_bias) add("v_bias", "self_attn.v_proj.bias", "attn_v.bias", {kv_dim});
    add("o_proj", "self_attn.o_proj.weight", "attn_output.weight", {c.hidden_size, q_dim});
    if (family.attn_out_norm) {
      add_norm("attn_out_norm", "post_attention_layernorm.weight", "post_attention_norm.weight",
               c.hidden_size);
    }
    if (family.ffn_in_norm) {
      add_norm("post_norm", family.ffn_in_norm_hf + ".weight", "ffn_norm.weight", c.hidden_size);
    }
    add("gate_proj", "mlp.gate_proj.weight", "ffn_gate.weight",
        {c.intermediate_size, c.hidden_size});
    add("up_proj", "mlp.up_proj.weight", "ffn_up.weight", {c.intermediate_size, c.hidden_size});
    add("down_proj", "mlp.down_proj.weight", "ffn_down.weight",
        {c.hidden_size, c.intermediate_size});
    if (family.ffn_out_norm) {
      add_norm("ffn_out_norm", "post_feedforward_layernorm.weight", "post_ffw_norm.weight",
               c.hidden_size);
    }
  }
  specs.push_back({"final_norm", "model.norm.weight", "output_norm.weight", {c.hidden_size}, e});
  specs.back().gguf_add = norm_add;
  if (!c.tie_word_embeddings) {
    specs.push_back(
        {"lm_head", "lm_head.weight", "output.weight", {c.vocab_size, c.hidden_size}, e});
  }
  return specs;
}

}  // namespace xlacel::models
