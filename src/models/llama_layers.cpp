#include "models/llama_layers.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace xlacel::models {

using namespace stablehlo;

Value to_f32(Value x) {
  return x.element() == ElementType::kF32 ? x : convert(x, ElementType::kF32);
}

Value depthwise_conv(Value window, Value weight, std::optional<Value> bias) {
  const std::vector<int64_t>& shape = window.shape();  // [T, taps, channels]
  Value convolved = reduce_sum(window * broadcast_in_dim(to_f32(weight), shape, {2, 1}), {1});
  if (!bias) return convolved;
  return convolved + broadcast_in_dim(to_f32(*bias), convolved.shape(), {1});
}

namespace {

// A matmul of an f32 activation with `other` (weights or cache) in other's element type,
// accumulating in f32. f32 x f32 asks for HIGHEST precision (no TF32 on GPUs), like torch.
Value dot_f32(Value lhs, Value rhs, const DotDimensions& dims) {
  if (rhs.element() == ElementType::kF32) {
    return dot_general(lhs, rhs, dims, {.precision = {{Precision::kHighest, Precision::kHighest}}});
  }
  return dot_general(convert(lhs, rhs.element()), rhs, dims, {.result_element = ElementType::kF32});
}

Value broadcast_like(Value x, const std::vector<int64_t>& shape, std::vector<int64_t> dims) {
  return broadcast_in_dim(x, shape, std::move(dims));
}

// Up to this many rows, a planar weight multiplies as one elementwise product reduced over its
// groups, which compilers fuse with the dequantization into one pass over the codes; more rows
// would redo the dequantization per row, so those dequantize once and use a matmul.
constexpr int64_t kFusedPlanarRows = 4;

// x [T, K] times a planar weight [N, K]: sum over groups and group members of x * w.
Value fused_planar_product(Value x, const Weight& weight) {
  Value w = dequantized_groups(weight);  // [N, G, g]
  const int64_t rows = x.shape()[0];
  const std::vector<int64_t> shape = {rows, w.shape()[0], w.shape()[1], w.shape()[2]};
  Value xs = broadcast_in_dim(reshape(x, {rows, w.shape()[1], w.shape()[2]}), shape, {0, 2, 3});
  return reduce_sum(xs * broadcast_in_dim(w, shape, {1, 2, 3}), {2, 3});
}

// A LayerNorm's statistics of x f32 [T, hidden] over its last axis: mean [T], x - mean, and
// rsqrt(biased variance + eps) [T].
struct Moments {
  Value mean, centred, rstd;
};
Moments moments(Value x, double eps) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0];
  const int64_t hidden = x.shape()[1];
  const TensorType row(ElementType::kF32, {tokens});
  Value count = constant(b, row, static_cast<double>(hidden));
  Value mean = reduce_sum(x, {1}) / count;
  Value centred = x - broadcast_like(mean, {tokens, hidden}, {0});
  Value var = reduce_sum(centred * centred, {1}) / count;
  return {mean, centred, rsqrt(var + constant(b, row, eps))};
}

// Whether the runtime's hand-written planar product takes this product.
bool kernel_takes(Value x, const Weight& weight) {
  return weight.planar() && weight.kernel != nullptr &&
         weight.kernel->handles(x.shape()[0], weight.cols() / weight.scales->shape()[1],
                                weight.code_bits);
}

}  // namespace

namespace {

// The runtime's product of x and 16-bit float values: an expert's read in place where the kernel
// reads experts (resident_weight.h, expert_matrix).
Value wide_product(Value x, const Weight& weight) {
  if (weight.stack && weight.kernel->reads_experts()) {
    return weight.kernel->multiply_wide(to_f32(x), weight.stack->values, weight.expert);
  }
  return weight.kernel->multiply_wide(to_f32(x), weight.values, std::nullopt);
}

}  // namespace

Value linear(Value x, const Weight& weight, std::optional<Value> bias) {
  const DotDimensions dims{.lhs_contracting = {1}, .rhs_contracting = {1}};
  Value y = kernel_takes(x, weight) ? weight.kernel->multiply(to_f32(x), planar_operands(weight))
            : wide_kernel_takes(weight, x.shape()[0])             ? wide_product(x, weight)
            : weight.planar() && x.shape()[0] <= kFusedPlanarRows ? fused_planar_product(x, weight)
            : weight.planar() || weight.widen ? dot_f32(x, dequantized(weight), dims)
                                              : dot_f32(x, weight.values, dims);
  if (bias) y = y + broadcast_like(to_f32(*bias), y.shape(), {1});
  return y;
}

Value rms_norm(Value x, Value weight, double eps) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0];
  const int64_t hidden = x.shape()[1];
  Value sum = reduce_sum(x * x, {1});
  Value mean = sum / constant(b, sum.type(), static_cast<double>(hidden));
  Value inv = rsqrt(mean + constant(b, sum.type(), eps));
  Value normed = x * broadcast_like(inv, {tokens, hidden}, {0});
  return broadcast_like(to_f32(weight), {tokens, hidden}, {1}) * normed;
}

Rotary rotary(Value positions, Value inv_freq, bool interleaved, double attention_scaling) {
  const int64_t tokens = positions.shape()[0];
  const int64_t half = inv_freq.shape()[0];
  Value pos = broadcast_like(convert(positions, ElementType::kF32), {tokens, half}, {0});
  Value freqs = pos * broadcast_like(inv_freq, {tokens, half}, {1});
  Value emb = interleaved
                  ? reshape(broadcast_like(freqs, {tokens, half, 2}, {0, 1}), {tokens, 2 * half})
                  : concatenate({freqs, freqs}, 1);
  Value cos = cosine(emb);
  Value sin = sine(emb);
  if (attention_scaling != 1.0) {
    // emb.cos() * attention_scaling, a Python float the float32 product rounds to float32.
    Value scale = constant(positions.block(), cos.type(), attention_scaling);
    cos = cos * scale;
    sin = sin * scale;
  }
  return {cos, sin, interleaved};
}

Value apply_rotary(Value x, const Rotary& r) {
  std::vector<int64_t> shape = x.shape();  // [T, heads, D]
  const int64_t rotated_dims = r.cos.shape()[1];
  if (rotated_dims < shape[2]) {
    // HF: cat([rotate(x[..., :rotary_dim]), x[..., rotary_dim:]], -1).
    Value head = slice(x, {0, 0, 0}, {shape[0], shape[1], rotated_dims});
    Value rest = slice(x, {0, 0, rotated_dims}, shape);
    return concatenate({apply_rotary(head, r), rest}, 2);
  }
  const int64_t d = shape[2];
  Value rotated;
  if (r.interleaved) {
    // Cohere's rotate_half: stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2).
    Value pairs = reshape(x, {shape[0], shape[1], d / 2, 2});
    Value x1 = slice(pairs, {0, 0, 0, 0}, {shape[0], shape[1], d / 2, 1});
    Value x2 = slice(pairs, {0, 0, 0, 1}, {shape[0], shape[1], d / 2, 2});
    rotated = reshape(concatenate({-x2, x1}, 3), shape);
  } else {
    Value x1 = slice(x, {0, 0, 0}, {shape[0], shape[1], d / 2});
    Value x2 = slice(x, {0, 0, d / 2}, {shape[0], shape[1], d});
    rotated = concatenate({-x2, x1}, 2);
  }
  Value cos = broadcast_like(r.cos, shape, {0, 2});
  Value sin = broadcast_like(r.sin, shape, {0, 2});
  return x * cos + rotated * sin;
}

std::optional<Value> kernel_attention(const AttentionInputs& in) {
  const std::vector<int64_t>& q_shape = in.q.shape();  // [N, T, H, D]
  const std::vector<int64_t>& k_shape = in.k_cache.shape();
  if (in.kernel == nullptr || in.key_positions || in.softcap || in.sliding_window || in.sinks ||
      in.q.element() != ElementType::kF32 || in.k_cache.element() != ElementType::kF32 ||
      in.v_cache.element() != ElementType::kF32) {
    return std::nullopt;
  }
  const int64_t n = q_shape[0], tokens = q_shape[1], heads = q_shape[2], d = q_shape[3];
  const int64_t kv_heads = k_shape[1], capacity = k_shape[2], group = heads / kv_heads;
  if (!in.kernel->handles(d, group, capacity)) return std::nullopt;
  // Key c is visible to the query at position p when c <= p (and c < end): keys [0, p + 1).
  const Value last = in.sees_through ? *in.sees_through : in.positions;
  Value visible = last + constant(in.positions.block(), in.positions.type(), 1.0);
  if (in.end) visible = minimum(visible, broadcast_like(*in.end, {n, tokens}, {0}));
  const double scale = in.scale != 0 ? in.scale : 1.0 / std::sqrt(static_cast<double>(d));
  // [N, T, H, D] -> [N, Hkv, T, G, D]: head h = kv * G + g (repeat_kv's order), and back.
  Value q = transpose(reshape(in.q, {n, tokens, kv_heads, group, d}), {0, 2, 1, 3, 4});
  // The window in place where the cache is whole (no copy of its rows [0, capacity)).
  const bool in_place = in.whole_k_cache && in.whole_v_cache;
  Value out = in.kernel->attend({.q = q,
                                 .keys = in_place ? *in.whole_k_cache : in.k_cache,
                                 .values = in_place ? *in.whole_v_cache : in.v_cache,
                                 .attended = capacity,
                                 .visible = visible,
                                 .scale = scale});
  return reshape(transpose(out, {0, 2, 1, 3, 4}), {n * tokens, heads * d});
}

Value attention(const AttentionInputs& in) {
  if (std::optional<Value> by_kernel = kernel_attention(in)) return *by_kernel;
  Block& b = in.q.block();
  const int64_t n = in.q.shape()[0];
  const int64_t tokens = in.q.shape()[1];
  const int64_t heads = in.q.shape()[2];
  const int64_t d = in.q.shape()[3];
  const int64_t kv_heads = in.k_cache.shape()[1];
  const int64_t capacity = in.k_cache.shape()[2];  // the keys attended (a window of the cache)
  const int64_t group = heads / kv_heads;

  // [N, T, H, D] -> [N, Hkv, G*T, D]: head h = kv * G + g (repeat_kv's order).
  Value q = reshape(in.q, {n, tokens, kv_heads, group, d});
  q = reshape(transpose(q, {0, 2, 3, 1, 4}), {n, kv_heads, group * tokens, d});
  Value scores = dot_f32(q, in.k_cache,
                         {.lhs_batching = {0, 1},
                          .rhs_batching = {0, 1},
                          .lhs_contracting = {3},
                          .rhs_contracting = {3}});  // [N, Hkv, G*T, C]
  const TensorType score_type(ElementType::kF32, {n, kv_heads, group, tokens, capacity});
  scores = reshape(scores, score_type.shape());
  const double scale = in.scale != 0 ? in.scale : 1.0 / std::sqrt(static_cast<double>(d));
  scores = scores * constant(b, score_type, scale);
  if (in.softcap) scores = softcap(scores, *in.softcap);

  const TensorType mask_type(ElementType::kI32, {n, tokens, capacity});
  Value key = in.key_positions ? broadcast_like(*in.key_positions, mask_type.shape(), {0, 2})
                               : iota(b, mask_type, 2);
  Value query = broadcast_like(in.positions, mask_type.shape(), {0, 1});
  Value last =
      in.sees_through ? broadcast_like(*in.sees_through, mask_type.shape(), {0, 1}) : query;
  Value visible = compare(key, last, Direction::kLE);
  if (in.key_positions) {
    visible = logical_and(visible, compare(key, constant(b, mask_type, 0.0), Direction::kGE));
  }
  if (in.end) {
    Value end = broadcast_like(*in.end, mask_type.shape(), {0});
    visible = logical_and(visible, compare(key, end, Direction::kLT));
  }
  if (in.sliding_window) {
    // transformers' sliding_window_overlay: kv_idx > q_idx - sliding_window.
    Value oldest = query - constant(b, mask_type, static_cast<double>(*in.sliding_window));
    visible = logical_and(visible, compare(key, oldest, Direction::kGT));
  }
  visible = broadcast_like(visible, score_type.shape(), {0, 3, 4});
  // The lowest finite float rather than -inf: a fully masked row stays finite (never NaN).
  Value lowest = constant(b, score_type, static_cast<double>(std::numeric_limits<float>::lowest()));
  scores = select(visible, scores, lowest);

  Value row_max = reduce_max(scores, {4});  // [N, Hkv, G, T]
  std::optional<Value> sink;                // the sink's logit of each row's head
  if (in.sinks) {
    // eager_attention_forward with s_aux: softmax over [scores ; sink], the sink's column
    // dropped.
    sink = broadcast_like(to_f32(reshape(*in.sinks, {kv_heads, group})), row_max.shape(), {1, 2});
    row_max = maximum(row_max, *sink);
  }
  Value max = broadcast_like(row_max, score_type.shape(), {0, 1, 2, 3});
  Value e = exponential(scores - max);
  Value row_sum = reduce_sum(e, {4});
  if (sink) row_sum = row_sum + exponential(*sink - row_max);
  Value sum = broadcast_like(row_sum, score_type.shape(), {0, 1, 2, 3});
  Value probs = reshape(e / sum, {n, kv_heads, group * tokens, capacity});

  Value out = dot_f32(probs, in.v_cache,
                      {.lhs_batching = {0, 1},
                       .rhs_batching = {0, 1},
                       .lhs_contracting = {3},
                       .rhs_contracting = {2}});  // [N, Hkv, G*T, D]
  out = transpose(reshape(out, {n, kv_heads, group, tokens, d}), {0, 3, 1, 2, 4});
  return reshape(out, {n * tokens, heads * d});
}

Value activate(Value x, Activation activation) {
  if (activation == Activation::kSilu) return x * logistic(x);
  // torch's GeluType::Tanh in float32: kBeta = sqrt(2) * (2/sqrt(pi)) * 0.5, kKappa = 0.044715;
  // 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x^3))).
  Block& b = x.block();
  auto c = [&](double value) { return constant(b, x.type(), value); };
  const double beta = std::numbers::sqrt2 * (2.0 / std::sqrt(std::numbers::pi)) * 0.5;
  Value cube = x * x * x;
  Value inner = c(beta) * (x + c(0.044715) * cube);
  return c(0.5) * x * (c(1.0) + tanh(inner));
}

Value mlp(Value x, const Weight& gate, const Weight& up, const Weight& down,
          Activation activation) {
  Value g = linear(x, gate);
  Value u = linear(x, up);
  return linear(activate(g, activation) * u, down);
}

Value layer_norm(Value x, Value weight, std::optional<Value> bias, double eps) {
  const int64_t tokens = x.shape()[0];
  const int64_t hidden = x.shape()[1];
  auto [mean, centred, rstd] = moments(x, eps);
  // torch's CPU kernel: (x * rstd + (-rstd * mean)) * weight + bias.
  Value shift = -(rstd * mean);
  Value normed = x * broadcast_like(rstd, {tokens, hidden}, {0}) +
                 broadcast_like(shift, {tokens, hidden}, {0});
  Value y = normed * broadcast_like(to_f32(weight), {tokens, hidden}, {1});
  if (bias) y = y + broadcast_like(to_f32(*bias), {tokens, hidden}, {1});
  return y;
}

Value cohere_layer_norm(Value x, Value weight, double eps) {
  const int64_t tokens = x.shape()[0];
  const int64_t hidden = x.shape()[1];
  auto [mean, centred, rstd] = moments(x, eps);
  Value normed = centred * broadcast_like(rstd, {tokens, hidden}, {0});
  return broadcast_like(to_f32(weight), {tokens, hidden}, {1}) * normed;
}

Value dense_mlp(Value x, const Weight& up, std::optional<Value> up_bias, const Weight& down,
                std::optional<Value> down_bias, Activation activation) {
  return linear(activate(linear(x, up, up_bias), activation), down, down_bias);
}

Value rms_norm_heads(Value x, Value weight, double eps) {
  const std::vector<int64_t> shape = x.shape();  // [T, H, D]
  Value flat = reshape(x, {shape[0] * shape[1], shape[2]});
  return reshape(rms_norm(flat, weight, eps), shape);
}

Value softcap(Value x, double cap) {
  Value c = constant(x.block(), x.type(), cap);
  return tanh(x / c) * c;
}

}  // namespace xlacel::models
