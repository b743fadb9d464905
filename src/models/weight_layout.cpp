#include "models/weight_layout.h"

#include <fmt/format.h>

#include "models/resident_weight.h"

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
    case WeightType::kAuto:
      return ElementType::kF32;  // the logical type; resident_weight_specs picks each stored one
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
  specs.push_back({"rope_inv_freq", "", "", {c.rope_dims() / 2}, ElementType::kF32, true});
  if (family.local_rope) {
    specs.push_back(
        {"rope_local_inv_freq", "", "", {c.rope_dims() / 2}, ElementType::kF32, true, true});
  }
  specs.push_back({"embed_tokens",
                   "model.embed_tokens.weight",
                   "token_embd.weight",
                   {c.vocab_size, c.hidden_size},
                   e});
  // Tensor parallelism cuts the vocabulary: each device looks up (and, tied, scores) its rows.
  specs.back().split = Split::kOutputs;
  // A norm's weight (and bias, for LayerNorms), `hf` and `gguf` naming the weight.
  auto add_norm = [&](const std::string& name, std::string hf, std::string gguf, int64_t size) {
    specs.push_back({name, hf, gguf, {size}, e});
    specs.back().gguf_add = norm_add;
    if (family.layer_norm) {
      auto bias = [](const std::string& weight) {
        return weight.substr(0, weight.size() - std::string(".weight").size()) + ".bias";
      };
      specs.push_back({name + "_bias", bias(hf), bias(gguf), {size}, e});
    }
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    // `split`: how tensor parallelism cuts it (tensor_split.h).
    auto add = [&](std::string name, std::string hf, std::string gguf, std::vector<int64_t> shape,
                   Split split = Split::kNone) {
      specs.push_back({fmt::format("l{}_{}", l, name), fmt::format("model.layers.{}.{}", l, hf),
                       fmt::format("blk.{}.{}", l, gguf), std::move(shape), e});
      specs.back().split = split;
    };
    auto add_layer_norm = [&](std::string name, std::string hf, std::string gguf, int64_t size) {
      add_norm(fmt::format("l{}_{}", l, name), fmt::format("model.layers.{}.{}", l, hf),
               fmt::format("blk.{}.{}", l, gguf), size);
    };
    // Rows [row, row + rows) of a fused tensor of `total` rows.
    auto add_rows = [&](std::string name, std::string hf, std::string gguf, int64_t row,
                        int64_t rows, int64_t total, Split split) {
      add(std::move(name), std::move(hf), std::move(gguf), {rows, c.hidden_size}, split);
      specs.back().source_rows = total;
      specs.back().source_row = row;
    };
    if (family.input_norm) {
      add_layer_norm("input_norm", "input_layernorm.weight", "attn_norm.weight", c.hidden_size);
    }
    const int64_t qkv_rows = q_dim + 2 * kv_dim;
    if (family.fused_qkv) {
      add_rows("q_proj", "self_attn.qkv_proj.weight", "attn_qkv.weight", 0, q_dim, qkv_rows,
               Split::kOutputs);
    } else {
      add("q_proj", "self_attn.q_proj.weight", "attn_q.weight", {q_dim, c.hidden_size},
          Split::kOutputs);
    }
    if (c.attention_bias) {
      add("q_bias", "self_attn.q_proj.bias", "attn_q.bias", {q_dim}, Split::kOutputs);
    }
    if (family.fused_qkv) {
      add_rows("k_proj", "self_attn.qkv_proj.weight", "attn_qkv.weight", q_dim, kv_dim, qkv_rows,
               Split::kKvOutputs);
    } else {
      add("k_proj", "self_attn.k_proj.weight", "attn_k.weight", {kv_dim, c.hidden_size},
          Split::kKvOutputs);
    }
    if (c.attention_bias) {
      add("k_bias", "self_attn.k_proj.bias", "attn_k.bias", {kv_dim}, Split::kKvOutputs);
    }
    if (family.qk_norm != QkNorm::kNone) {
      const bool per_head = family.qk_norm == QkNorm::kPerHead;
      add("q_norm", "self_attn.q_norm.weight", "attn_q_norm.weight",
          {per_head ? c.head_dim : q_dim});
      specs.back().gguf_add = norm_add;
      add("k_norm", "self_attn.k_norm.weight", "attn_k_norm.weight",
          {per_head ? c.head_dim : kv_dim});
      specs.back().gguf_add = norm_add;
    }
    if (family.fused_qkv) {
      add_rows("v_proj", "self_attn.qkv_proj.weight", "attn_qkv.weight", q_dim + kv_dim, kv_dim,
               qkv_rows, Split::kKvOutputs);
    } else {
      add("v_proj", "self_attn.v_proj.weight", "attn_v.weight", {kv_dim, c.hidden_size},
          Split::kKvOutputs);
    }
    if (c.attention_bias) {
      add("v_bias", "self_attn.v_proj.bias", "attn_v.bias", {kv_dim}, Split::kKvOutputs);
    }
    add("o_proj", "self_attn.o_proj.weight", "attn_output.weight", {c.hidden_size, q_dim},
        Split::kInputs);
    if (c.linear_bias) add("o_bias", "self_attn.o_proj.bias", "attn_output.bias", {c.hidden_size});
    if (family.attn_out_norm) {
      add_layer_norm("attn_out_norm", "post_attention_layernorm.weight",
                     "post_attention_norm.weight", c.hidden_size);
    }
    if (family.ffn_in_norm) {
      add_layer_norm("post_norm", family.ffn_in_norm_hf + ".weight", "ffn_norm.weight",
                     c.hidden_size);
    }
    const int64_t inter = c.intermediate_size;
    if (c.num_experts > 0) {
      // The router, then each expert's gate, up and down (GGUF: row blocks of stacked tensors).
      const std::string moe = family.moe_hf;
      const int64_t ei = c.expert_intermediate_size;
      add("router", moe + ".gate.weight", "ffn_gate_inp.weight", {c.num_experts, c.hidden_size});
      for (int64_t x = 0; x < c.num_experts; ++x) {
        auto expert = [&](const char* name, const std::string& hf, const char* gguf,
                          std::vector<int64_t> shape, Split split) {
          add(fmt::format("e{}_{}", x, name), fmt::format("{}.experts.{}.{}.weight", moe, x, hf),
              gguf, shape, split);
          specs.back().source_rows = c.num_experts * shape[0];
          specs.back().source_row = x * shape[0];
          specs.back().source_rows_gguf_only = true;
          specs.back().expert = true;
        };
        expert("gate_proj", family.expert_gate_hf, "ffn_gate_exps.weight", {ei, c.hidden_size},
               Split::kOutputs);
        expert("up_proj", family.expert_up_hf, "ffn_up_exps.weight", {ei, c.hidden_size},
               Split::kOutputs);
        expert("down_proj", family.expert_down_hf, "ffn_down_exps.weight", {c.hidden_size, ei},
               Split::kInputs);
      }
    } else if (!family.gated_mlp) {
      add("up_proj", "mlp.c_fc.weight", "ffn_up.weight", {inter, c.hidden_size}, Split::kOutputs);
      if (c.linear_bias) add("up_bias", "mlp.c_fc.bias", "ffn_up.bias", {inter}, Split::kOutputs);
      add("down_proj", "mlp.c_proj.weight", "ffn_down.weight", {c.hidden_size, inter},
          Split::kInputs);
      if (c.linear_bias) add("down_bias", "mlp.c_proj.bias", "ffn_down.bias", {c.hidden_size});
    } else {
      if (family.fused_gate_up) {
        add_rows("gate_proj", "mlp.gate_up_proj.weight", "ffn_up.weight", 0, inter, 2 * inter,
                 Split::kOutputs);
        add_rows("up_proj", "mlp.gate_up_proj.weight", "ffn_up.weight", inter, inter, 2 * inter,
                 Split::kOutputs);
      } else {
        add("gate_proj", "mlp.gate_proj.weight", "ffn_gate.weight", {inter, c.hidden_size},
            Split::kOutputs);
        add("up_proj", "mlp.up_proj.weight", "ffn_up.weight", {inter, c.hidden_size},
            Split::kOutputs);
      }
      add("down_proj", "mlp.down_proj.weight", "ffn_down.weight", {c.hidden_size, inter},
          Split::kInputs);
    }
    if (family.ffn_out_norm) {
      add_layer_norm("ffn_out_norm", "post_feedforward_layernorm.weight", "post_ffw_norm.weight",
                     c.hidden_size);
    }
  }
  add_norm("final_norm", "model.norm.weight", "output_norm.weight", c.hidden_size);
  if (!c.tie_word_embeddings) {
    specs.push_back(
        {"lm_head", "lm_head.weight", "output.weight", {c.vocab_size, c.hidden_size}, e});
    specs.back().split = Split::kOutputs;
  }
  return resident_weight_specs(c, std::move(specs), weights);
}

}  // namespace xlacel::models
