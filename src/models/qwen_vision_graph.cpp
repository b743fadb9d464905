// Qwen2.5-VL's vision tower (Qwen2_5_VisionTransformerPretrainedModel) for one image grid: its
// weights (the published checkpoints' visual.* and llama.cpp's mmproj names) and its graph.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>

#include "models/llama_layers.h"
#include "models/vision_tower.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

std::string block_name(int64_t block, const char* name) {
  return fmt::format("v{}_{}", block, name);
}

// A linear layer's weight [out, in] and bias [out] (<name>, <name>_bias): HF's <hf>.weight and
// .bias, rows [row, row + out) of `hf_total` where the checkpoint fuses them (qkv); GGUF's
// <gguf>.weight and .bias whole.
void add_linear(std::vector<WeightSpec>& specs, const std::string& name, const std::string& hf,
                const std::string& gguf, int64_t out, int64_t in, ElementType element,
                WeightSpec::FileRows hf_rows = {}) {
  for (const auto& [suffix, kind] : {std::pair{"", ".weight"}, {"_bias", ".bias"}}) {
    std::vector<int64_t> shape = {out};
    if (*suffix == '\0') shape.push_back(in);
    WeightSpec spec = vision_weight(name + suffix, hf + kind, gguf + kind, shape, element);
    spec.hf_rows = hf_rows;
    specs.push_back(std::move(spec));
  }
}

Value linear_of(const VisionWeights& w, const std::string& name, Value x) {
  return linear(x, w.at(name), w.at(name + "_bias"));
}

// Qwen2_5_VLRMSNorm of the residual stream, materialised first (an optimization barrier, as the
// SigLIP encoder's norms: IREE would otherwise fuse what computes x into the norm's reduction over
// a whole image's rows and overflow its dispatch stack).
Value rms_norm_of(const VisionConfig& c, const VisionWeights& w, const std::string& name, Value x) {
  return rms_norm(optimization_barrier(x), w.at(name), c.layer_norm_eps);
}

Value i32_constant(Block& b, const std::vector<int64_t>& values) {
  return constant(b, TensorType(ElementType::kI32, {static_cast<int64_t>(values.size())}), values);
}

Value f32_constant(Block& b, const std::vector<double>& values) {
  return constant(b, TensorType(ElementType::kF32, {static_cast<int64_t>(values.size())}), values);
}

// x's rows in the order `rows` names (numpy's take), or x where that is every row in order.
Value take_rows(Value x, const std::vector<int64_t>& rows) {
  std::vector<int64_t> identity(rows.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (rows == identity) return x;
  return take(x, i32_constant(x.block(), rows));
}

// erf(x) in f32 as Eigen's (and so XLA's) rational approximation: x clamped to [-4, 4], an odd
// polynomial of degree 13 over an even one of degree 8 (within 5e-7 of erf).
Value erf(Value x) {
  Block& b = x.block();
  auto c = [&](double value) { return constant(b, x.type(), value); };
  x = minimum(maximum(x, c(-4.0)), c(4.0));
  Value x2 = x * x;
  auto polynomial = [&](std::initializer_list<double> coefficients) {  // highest power first
    Value p = c(*coefficients.begin());
    for (auto it = coefficients.begin() + 1; it != coefficients.end(); ++it) p = p * x2 + c(*it);
    return p;
  };
  Value p = polynomial({-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                        -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                        -1.60960333262415e-02});
  Value q = polynomial({-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                        -7.37332916720468e-03, -1.42647390514189e-02});
  return x * p / q;
}

// torch's nn.GELU() (approximate "none") in f32: x * 0.5 * (1 + erf(x * M_SQRT1_2)).
Value gelu_erf(Value x) {
  auto c = [&](double value) { return constant(x.block(), x.type(), value); };
  return x * c(0.5) * (c(1.0) + erf(x * c(1.0 / std::numbers::sqrt2)));
}

// The block mask of one segmentation of the patches (in window order): place i sees place j when
// both lie in the same segment; none where there is one segment.
std::optional<Value> segment_mask(Block& b, const std::vector<int64_t>& segments) {
  if (std::all_of(segments.begin(), segments.end(), [&](int64_t s) { return s == segments[0]; })) {
    return std::nullopt;
  }
  const auto n = static_cast<int64_t>(segments.size());
  Value ids = i32_constant(b, segments);
  return compare(broadcast_in_dim(ids, {n, n}, {0}), broadcast_in_dim(ids, {n, n}, {1}),
                 Direction::kEQ);
}

// Qwen2_5_VLVisionRotaryEmbedding's cos and sin, f32 [patches, head_dim], for the patches' (h, w)
// ids: the frequencies h * inv_freq and w * inv_freq (inv_freq of head_dim / 2 dims, as torch
// computes it in f32) concatenated, twice.
Rotary vision_rotary(const VisionConfig& c, Block& b,
                     const std::vector<std::pair<int64_t, int64_t>>& ids) {
  const int64_t spatial = c.head_dim() / 2;
  std::vector<double> inv_freq;
  for (int64_t i = 0; i < spatial; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(spatial);
    inv_freq.push_back(1.0f / std::pow(static_cast<float>(c.rope_theta), exponent));
  }
  const auto n = static_cast<int64_t>(ids.size());
  const auto half = static_cast<int64_t>(inv_freq.size());
  Value inv = broadcast_in_dim(f32_constant(b, inv_freq), {n, half}, {1});
  auto freqs = [&](auto coordinate) {
    std::vector<double> positions;
    for (const auto& id : ids) positions.push_back(static_cast<double>(coordinate(id)));
    return broadcast_in_dim(f32_constant(b, positions), {n, half}, {0}) * inv;
  };
  Value hw = concatenate({freqs([](const auto& id) { return id.first; }),
                          freqs([](const auto& id) { return id.second; })},
                         1);
  Value emb = concatenate({hw, hw}, 1);
  return {cosine(emb), sine(emb), false};
}

// Qwen2_5_VLVisionAttention with eager attention over x f32 [patches, hidden]: the fused qkv,
// the rotary on q and k, softmax(q k^T * head_dim^-0.5) v within the mask's blocks, then proj.
Value attention(const VisionConfig& c, const VisionWeights& w, int64_t l, Value x,
                const Rotary& rotary, const std::optional<Value>& mask) {
  const int64_t n = x.shape()[0];
  auto heads = [&](const char* name) {
    return reshape(linear_of(w, block_name(l, name), x), {n, c.num_heads, c.head_dim()});
  };
  Value q = apply_rotary(heads("q"), rotary);
  Value k = apply_rotary(heads("k"), rotary);
  Value v = heads("v");
  const DotOptions highest{.precision = {{Precision::kHighest, Precision::kHighest}}};
  // [heads, queries, keys]
  Value scores = dot_general(
      q, k,
      {.lhs_batching = {1}, .rhs_batching = {1}, .lhs_contracting = {2}, .rhs_contracting = {2}},
      highest);
  Block& b = x.block();
  scores = scores * constant(b, scores.type(), std::pow(static_cast<double>(c.head_dim()), -0.5));
  const std::vector<int64_t>& shape = scores.shape();
  if (mask) {
    // Keys outside the query's window weigh exactly 0, as in HF's attention per window.
    Value lowest =
        constant(b, scores.type(), static_cast<double>(std::numeric_limits<float>::lowest()));
    scores = select(broadcast_in_dim(*mask, shape, {1, 2}), scores, lowest);
  }
  Value shifted = scores - broadcast_in_dim(reduce_max(scores, {2}), shape, {0, 1});
  Value e = exponential(shifted);
  Value probabilities = e / broadcast_in_dim(reduce_sum(e, {2}), shape, {0, 1});
  // [heads, queries, head_dim]
  Value attended = dot_general(
      probabilities, v,
      {.lhs_batching = {0}, .rhs_batching = {1}, .lhs_contracting = {2}, .rhs_contracting = {0}},
      highest);
  attended = reshape(transpose(attended, {1, 0, 2}), {n, c.hidden_size});
  return linear_of(w, block_name(l, "proj"), attended);
}

// Qwen2_5_VLVisionBlock: x + attn(norm1(x)), then + down(silu(gate(h)) * up(h)), h = norm2(x).
Value vision_block(const VisionConfig& c, const VisionWeights& w, int64_t l, Value x,
                   const Rotary& rotary, const std::optional<Value>& mask) {
  x = x + attention(c, w, l, rms_norm_of(c, w, block_name(l, "norm1"), x), rotary, mask);
  Value h = rms_norm_of(c, w, block_name(l, "norm2"), x);
  Value gated = activate(linear_of(w, block_name(l, "gate"), h), Activation::kSilu) *
                linear_of(w, block_name(l, "up"), h);
  return x + linear_of(w, block_name(l, "down"), gated);
}

}  // namespace

void add_qwen_vision_weights(std::vector<WeightSpec>& specs, const VisionConfig& c,
                             ElementType element) {
  const int64_t d = c.hidden_size;
  // llama.cpp's converter splits the Conv3d into one [D, C, p, p] tensor per frame
  // (v.patch_embd.weight, v.patch_embd.weight.1): an mmproj file does not load this one.
  specs.push_back(vision_weight(
      "v_patch_embd", "visual.patch_embed.proj.weight", "v.patch_embd.weight",
      {d, c.num_channels, c.temporal_patch_size, c.patch_size, c.patch_size}, element));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string hf = fmt::format("visual.blocks.{}.", l);
    const std::string gguf = fmt::format("v.blk.{}.", l);
    specs.push_back(vision_weight(block_name(l, "norm1"), hf + "norm1.weight", gguf + "ln1.weight",
                                  {d}, element));
    // HF fuses q, k and v into attn.qkv ([3 * hidden, hidden]); llama.cpp splits them.
    int64_t row = 0;
    for (const char* name : {"q", "k", "v"}) {
      add_linear(specs, block_name(l, name), hf + "attn.qkv", gguf + "attn_" + name, d, d, element,
                 {row, 3 * d});
      row += d;
    }
    add_linear(specs, block_name(l, "proj"), hf + "attn.proj", gguf + "attn_out", d, d, element);
    specs.push_back(vision_weight(block_name(l, "norm2"), hf + "norm2.weight", gguf + "ln2.weight",
                                  {d}, element));
    for (const char* name : {"gate", "up"}) {
      add_linear(specs, block_name(l, name), hf + "mlp." + name + "_proj", gguf + "ffn_" + name,
                 c.intermediate_size, d, element);
    }
    add_linear(specs, block_name(l, "down"), hf + "mlp.down_proj", gguf + "ffn_down", d,
               c.intermediate_size, element);
  }
  const int64_t merged = d * c.spatial_merge_size * c.spatial_merge_size;
  specs.push_back(
      vision_weight("mm_ln_q", "visual.merger.ln_q.weight", "v.post_ln.weight", {d}, element));
  add_linear(specs, "mm_0", "visual.merger.mlp.0", "mm.0", merged, merged, element);
  add_linear(specs, "mm_2", "visual.merger.mlp.2", "mm.2", c.text_hidden_size, merged, element);
}

Value emit_qwen_vision(const VisionConfig& c, const VisionGrid& grid, const VisionWeights& w,
                       Value pixel_values) {
  Block& b = pixel_values.block();
  const int64_t unit = c.spatial_merge_size * c.spatial_merge_size;
  const QwenVisionWindows windows = qwen_vision_windows(c, grid);
  // Place j of the window order holds patch order[j] (its unit's patches stay together).
  std::vector<int64_t> order;
  for (int64_t u : windows.window_index) {
    for (int64_t k = 0; k < unit; ++k) order.push_back(u * unit + k);
  }
  // Qwen2_5_VisionPatchEmbed: the Conv3d over each row's [C, T, p, p] values, a matmul.
  Value x = linear(pixel_values, reshape(w.at("v_patch_embd"), {c.hidden_size, c.patch_values()}));
  x = take_rows(x, order);

  const std::vector<std::pair<int64_t, int64_t>> all_ids = qwen_vision_position_ids(c, grid);
  std::vector<std::pair<int64_t, int64_t>> ids;
  for (int64_t patch : order) ids.push_back(all_ids[static_cast<size_t>(patch)]);
  const Rotary rotary = vision_rotary(c, b, ids);

  // Full attention sees the patches of its frame (cu_seqlens), window attention its window's.
  const int64_t frame = grid.h * grid.w;
  std::vector<int64_t> frames, window_of;
  for (int64_t j = 0; j < grid.patches(); ++j) frames.push_back(j / frame);
  for (size_t s = 0; s + 1 < windows.cu_window_seqlens.size(); ++s) {
    for (int64_t j = windows.cu_window_seqlens[s]; j < windows.cu_window_seqlens[s + 1]; ++j) {
      window_of.push_back(static_cast<int64_t>(s));
    }
  }
  const std::optional<Value> full_mask = segment_mask(b, frames);
  const std::optional<Value> window_mask = segment_mask(b, window_of);
  const std::vector<int64_t>& full = c.fullatt_block_indexes;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const bool is_full = std::find(full.begin(), full.end(), l) != full.end();
    x = vision_block(c, w, l, x, rotary, is_full ? full_mask : window_mask);
  }

  // Qwen2_5_VLPatchMerger: ln_q, each unit's patches side by side, Linear, GELU, Linear.
  Value merged =
      reshape(rms_norm_of(c, w, "mm_ln_q", x), {grid.patches() / unit, unit * c.hidden_size});
  Value features = linear_of(w, "mm_2", gelu_erf(linear_of(w, "mm_0", merged)));
  // The units back in the processor's order (argsort of window_index).
  std::vector<int64_t> reverse(windows.window_index.size());
  for (size_t i = 0; i < reverse.size(); ++i) {
    reverse[static_cast<size_t>(windows.window_index[i])] = static_cast<int64_t>(i);
  }
  return take_rows(features, reverse);
}

}  // namespace xlacel::models
