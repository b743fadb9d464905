#pragma once
// The weight arguments of the decoder graphs: names, shapes and element types, in argument
// order. The list (decoder_weights.h, decoder_weight_specs) is THE one definition shared by the
// graph emitter (decoder_graph.cpp declares exactly these function arguments, in this order) and
// the weight loader (weight_loader.h produces host tensors in this order), both reaching it
// through the Architecture's weight_specs (architecture.h), so the two cannot drift apart. Argument
// order of every graph's `main`: inputs, these weights, then the KV caches (graph_signature.h,
// graph_options.h).
//
// Weights (HF layout: linear weights are [out_features, in_features]; GGUF files are mapped to
// HF names, their Q/K rows kept as llama.cpp's converter permuted them where RoPE turns whole
// heads, ModelConfig::qk_rows_interleaved, and else un-permuted as transformers does):
//
//   rope_inv_freq            f32 [head_dim/2]  RoPE inverse frequencies, computed on the host
//                            exactly as transformers does (llama3 scaling included; divided
//                            by rope_freqs.weight for GGUF frequency factors). Always f32.
//   embed_tokens             [vocab, hidden]          model.embed_tokens.weight
//   per layer L (0..num_layers-1):
//     l{L}_input_norm        [hidden]                 model.layers.L.input_layernorm.weight
//     l{L}_q_proj            [heads*head_dim, hidden] model.layers.L.self_attn.q_proj.weight
//     l{L}_q_bias            [heads*head_dim]         ...q_proj.bias (attention_bias only)
//     l{L}_k_proj            [kv_heads*head_dim, hidden]
//     l{L}_k_bias            [kv_heads*head_dim]      (attention_bias only)
//     l{L}_v_proj            [kv_heads*head_dim, hidden]
//     l{L}_v_bias            [kv_heads*head_dim]      (attention_bias only)
//     l{L}_o_proj            [hidden, heads*head_dim]
//     l{L}_post_norm         [hidden]                 ...post_attention_layernorm.weight
//     l{L}_gate_proj         [intermediate, hidden]   ...mlp.gate_proj.weight
//     l{L}_up_proj           [intermediate, hidden]
//     l{L}_down_proj         [hidden, intermediate]
//   final_norm               [hidden]                 model.norm.weight
//   lm_head                  [vocab, hidden]          lm_head.weight (untied models only; tied
//                                                     models use embed_tokens)
//
// Every tensor but rope_inv_freq has the graph's WeightType (norm weights and biases included;
// the graph widens them to f32 where it computes in f32).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model_files/model_config.h"
#include "models/graph_options.h"
#include "models/tensor_split.h"
#include "stablehlo/types.h"

namespace xlacel::models {

// Which part of a file tensor an argument holds: the values, or one plane of a GGML block
// format kept resident (model_files/planar_blocks.h, models/resident_weight.h).
// The two-level formats add the f16 factors per 256 elements of their i8 scales and offsets;
// the 5- and 6-bit formats the high bits of their codes.
enum class WeightPart {
  kValues,
  kCodes,
  kScales,
  kOffsets,
  kSuperScales,
  kSuperOffsets,
  kHighBits
};

struct WeightSpec {
  std::string name;                // argument name: "l3_q_proj" ("l3_q_proj_scales" for a plane)
  std::string hf_name;             // "model.layers.3.self_attn.q_proj.weight"
  std::string gguf_name;           // "blk.3.attn_q.weight"
  std::vector<int64_t> shape;      // outermost first
  stablehlo::ElementType element;  // the graph argument's element type
  bool rope_inv_freq = false;      // computed from the config, not read from the files
  bool rope_local = false;         // rope_inv_freq of sliding layers (rope_local_theta / _scaling)
  float gguf_add = 0.0f;           // added to every value read from a GGUF file (Gemma norms: -1)
  // Where `total` > 0, the file's tensor has that many rows and this argument is its rows [row,
  // row + shape[0]) (a fused qkv or gate_up tensor, split on the host), per format: HF and GGUF
  // fuse differently (experts stacked in GGUF only; Granite's gate and up fused in HF only).
  // A file tensor of more than two dimensions counts its rows over all but the last (stacked
  // experts [E, rows, cols]).
  struct FileRows {
    int64_t row = 0;
    int64_t total = 0;
  };
  FileRows hf_rows = {}, gguf_rows = {};
  void set_rows(int64_t row, int64_t total) { hf_rows = gguf_rows = {row, total}; }
  // HF files store log(-A) (Mamba's A_log) where GGUF stores A: the loader takes -exp of HF's.
  bool hf_negative_exp = false;
  // HF files only, where >= 0: the argument is matrix `hf_stacked` of the stacked tensor
  // hf_name ([n, a, b], or [n, b] for a vector), of whose last axis it takes every
  // hf_interleave-th element from hf_interleave_offset (gpt-oss's gate_up_proj: gate at even
  // columns, up at odd), transposed where hf_transposed (stored [in, out], as x @ W).
  int64_t hf_stacked = -1;
  int64_t hf_interleave = 1, hf_interleave_offset = 0;
  bool hf_transposed = false;
  // Every expert's matrix (or plane, or bias) of a mixture, stacked on a leading axis: [E, rows,
  // cols] ([E, n] for biases), as GGUF stores ffn_*_exps. A step reads the chosen experts' alone
  // (llama_layers.h, mixture_of_experts).
  bool expert = false;
  // HF files only, where > 0: the argument stacks that many experts, expert x's matrix read as
  // hf_expert_spec(*this, x) reads it (HF stores experts one tensor each, or as row blocks of a
  // fused tensor, or stacked with hf_stacked).
  int64_t hf_experts = 0;
  int64_t hf_expert_row_step = 0;  // hf_rows.row of expert x: hf_rows.row + x * this
  WeightPart part = WeightPart::kValues;
  DType stored = DType::kF32;  // planes: the file's block format
  // kCodes of a 4-bit format: rows in pairs (model_files/planar_blocks.h, pair_code_rows;
  // paired_nibble_specs below).
  bool paired_rows = false;
  // Tensor parallelism (tensor_split.h); planes inherit their matrix's role.
  Split split = Split::kNone;
  // A split of axis 1 keeps runs of this many columns together, or replicates the matrix when
  // its devices' slices would not be whole runs: 1, or for a plane the columns one block of the
  // matrix takes there (a group or 256-element super-group of codes, its scales, ...), so that
  // every plane of a matrix is cut at the same element boundaries.
  int64_t column_granule = 1;
};

// Expert x's matrix of a stacked argument (WeightSpec::hf_experts) as read from HF files alone:
// hf_name with its "{}" as x, matrix x of a stacked tensor (where hf_stacked >= 0), or its row
// block (hf_rows advanced by x * hf_expert_row_step); the shape without the leading axis.
WeightSpec hf_expert_spec(const WeightSpec& stacked, int64_t x);

// The specs of `logical` (f32 specs in HF layout; models/resident_weight.h) as resident arguments
// for `weights`: for kAuto, each matrix in its stored format (config.stored_types, looked up by
// GGUF then HF name); other weight types return `logical` unchanged.
std::vector<WeightSpec> resident_weight_specs(const ModelConfig& config,
                                              std::vector<WeightSpec> logical, WeightType weights);

// `specs` (resident_weight_specs) with every 4-bit codes plane that can be
// (model_files/planar_blocks.h, can_pair_code_rows) in row pairs, renamed <name>_paired_nibbles
// (resident_weight.h); experts' planes stay as they are (decode gathers the chosen ones).
std::vector<WeightSpec> paired_nibble_specs(std::vector<WeightSpec> specs);

stablehlo::ElementType element_of(WeightType type);
// The KV-cache element type for graphs of `weights`: the weight type (f32, bf16 or f16).
stablehlo::ElementType cache_element(WeightType weights);

}  // namespace xlacel::models
