#include "models/mamba2_block.h"

#include <fmt/format.h>

#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

// The convolution's channels: x, then B and C of every group.
int64_t conv_channels(const ModelConfig& c) {
  return c.ssm_inner() + 2 * c.ssm_groups * c.ssm_state;
}

Value scalar_like(Value like, double value) {
  return constant(like.block(), like.type(), value);
}

// torch's softplus (threshold 20): x past 20, else log1p(exp(x)), with log1p(u) formed as
// log(1 + u) * u / ((1 + u) - 1), exact where 1 + u rounds (u is exp of a time step's bias,
// often far below 1).
Value softplus(Value x) {
  Value u = exponential(x);
  Value w = u + scalar_like(u, 1.0);
  Value rounded = compare(w, scalar_like(w, 1.0), Direction::kEQ);
  Value log1p = select(rounded, u, log(w) * (u / (w - scalar_like(w, 1.0))));
  return select(compare(x, scalar_like(x, 20.0), Direction::kGT), x, log1p);
}

// 1 where `mask`, else 0, in f32: a select rather than a convert of the i1 (with converts of
// constant masks, IREE 3.13 at O3 turned this graph's scan into NaN; XLA and IREE at O1 did not).
Value ones_where(Value mask) {
  Block& b = mask.block();
  const TensorType type(ElementType::kF32, mask.shape());
  return select(mask, constant(b, type, 1.0), constant(b, type, 0.0));
}

// [N, L, G, S] per group -> [N, heads, L, S] per head (head h reads group h / (heads / G)).
Value per_head(Value grouped, int64_t heads) {
  const std::vector<int64_t> s = grouped.shape();
  const int64_t n = s[0], rows = s[1], groups = s[2], state = s[3];
  Value spread = broadcast_in_dim(grouped, {n, rows, groups, heads / groups, state}, {0, 1, 2, 4});
  return transpose(reshape(spread, {n, rows, heads, state}), {0, 2, 1, 3});
}

struct ScanResult {
  Value y;      // f32 [N, heads, L, head_dim]
  Value state;  // f32 [N, heads, head_dim, state]: after each sequence's last real row
};

// The selective scan of N sequences' L rows each from their states h0, in the chunked form
// (mamba2_block.h). x [N, heads, L, head_dim], dt [N, heads, L] (after softplus), a = dt * A
// [N, heads, L], B and C per head [N, heads, L, state], valid i32 [N] (none: all L real).
ScanResult selective_scan(Value x, Value dt, Value a, Value b_heads, Value c_heads, Value h0,
                          std::optional<Value> valid) {
  Block& b = x.block();
  const std::vector<int64_t> s = x.shape();
  const int64_t n = s[0], heads = s[1], rows = s[2];
  const TensorType square_i32(ElementType::kI32, {rows, rows});
  // cum[t] = a_0 + ... + a_t, as a product with the lower triangle.
  Value lower = ones_where(
      compare(iota(b, square_i32, 0), iota(b, square_i32, 1), Direction::kGE));  // [t, s]: s <= t
  Value cum = dot_general(a, lower, {.lhs_contracting = {2}, .rhs_contracting = {1}});
  // decay[t, s] = exp(cum_t - cum_s) for s <= t, else 0 ([N, heads, L, L]).
  const std::vector<int64_t> square = {n, heads, rows, rows};
  // cum_t - cum_s = sum_k a_k ([k <= t] - [k <= s]), as one product with that constant [k, t,
  // s]: IREE 3.13 at O3 miscomputes cum_t - cum_s formed from cum's broadcasts (along t and along
  // s, or one the transpose of the other).
  const TensorType cube_i32(ElementType::kI32, {rows, rows, rows});
  Value k = iota(b, cube_i32, 0);
  Value spans = ones_where(compare(k, iota(b, cube_i32, 1), Direction::kLE)) -
                ones_where(compare(k, iota(b, cube_i32, 2), Direction::kLE));
  Value difference = dot_general(a, spans, {.lhs_contracting = {2}, .rhs_contracting = {0}});
  // Every exponent here is <= 0 where it counts (A < 0, dt > 0) and is clamped to 0 where it does
  // not (s > t, padding rows), so that no exp overflows under a mask (inf x 0 is NaN).
  Value zeros = constant(b, TensorType(ElementType::kF32, square), 0.0);
  Value decay = exponential(minimum(difference, zeros)) * broadcast_in_dim(lower, square, {2, 3});
  // M[t, s] = (C_t . B_s) decay[t, s] dt_s; y = M x + exp(cum_t) (C_t . h0) + (D x: the caller's).
  Value scores = dot_general(c_heads, b_heads,
                             {.lhs_batching = {0, 1},
                              .rhs_batching = {0, 1},
                              .lhs_contracting = {3},
                              .rhs_contracting = {3}});
  Value mixing = scores * decay * broadcast_in_dim(dt, square, {0, 1, 3});
  Value y = dot_general(mixing, x,
                        {.lhs_batching = {0, 1},
                         .rhs_batching = {0, 1},
                         .lhs_contracting = {3},
                         .rhs_contracting = {2}});
  Value from_state = dot_general(c_heads, h0,
                                 {.lhs_batching = {0, 1},
                                  .rhs_batching = {0, 1},
                                  .lhs_contracting = {3},
                                  .rhs_contracting = {3}});  // [N, heads, L, head_dim]
  y = y + from_state * broadcast_in_dim(exponential(cum), from_state.shape(), {0, 1, 2});
  // The state after the last real row r: exp(cum_r) h0 + sum_{s <= r} exp(cum_r - cum_s) dt_s
  // x_s B_s^T, rows past r weighing 0.
  // cum_last = the real rows' sum of a, as a product with their 0/1 mask (IREE 3.13 at O3 fails
  // "operand does not dominate this use" on a reduce of the selected rows).
  Value real;      // i1 [N, L]: the rows before each sequence's valid length
  Value cum_last;  // [N, heads]
  if (valid) {
    const TensorType rows_i32(ElementType::kI32, {n, rows});
    real = compare(iota(b, rows_i32, 1), broadcast_in_dim(*valid, {n, rows}, {0}), Direction::kLT);
    cum_last = dot_general(
        a, ones_where(real),
        {.lhs_batching = {0}, .rhs_batching = {0}, .lhs_contracting = {2}, .rhs_contracting = {1}});
  } else {
    cum_last = reduce_sum(a, {2});
  }
  Value weight = exponential(minimum(broadcast_in_dim(cum_last, a.shape(), {0, 1}) - cum,
                                     constant(b, a.type(), 0.0))) *
                 dt;
  if (valid) {
    weight = select(broadcast_in_dim(real, weight.shape(), {0, 2}), weight,
                    constant(b, weight.type(), 0.0));
  }
  Value weighted_x = x * broadcast_in_dim(weight, s, {0, 1, 2});
  Value added = dot_general(weighted_x, b_heads,
                            {.lhs_batching = {0, 1},
                             .rhs_batching = {0, 1},
                             .lhs_contracting = {2},
                             .rhs_contracting = {2}});  // [N, heads, head_dim, state]
  Value state = h0 * broadcast_in_dim(exponential(cum_last), h0.shape(), {0, 1}) + added;
  return {y, state};
}

}  // namespace

void Mamba2Block::add_weights(DecoderWeights& weights, int64_t l) const {
  const ModelConfig& c = weights.config();
  const int64_t hidden = c.hidden_size, inner = c.ssm_inner(), channels = conv_channels(c);
  const int64_t projected = inner + channels + c.ssm_heads;
  auto add = [&](const char* name, const char* hf, const char* gguf, std::vector<int64_t> shape) {
    return &weights.add_layer(l, name, fmt::format("mamba.{}", hf), gguf, std::move(shape));
  };
  add("ssm_in_proj", "in_proj.weight", "ssm_in.weight", {projected, hidden});
  if (c.ssm_proj_bias) add("ssm_in_bias", "in_proj.bias", "ssm_in.bias", {projected});
  add("ssm_conv_weight", "conv1d.weight", "ssm_conv1d.weight", {channels, c.conv_kernel});
  if (c.conv_bias) add("ssm_conv_bias", "conv1d.bias", "ssm_conv1d.bias", {channels});
  add("ssm_dt_bias", "dt_bias", "ssm_dt.bias", {c.ssm_heads});
  add("ssm_a", "A_log", "ssm_a", {c.ssm_heads})->hf_negative_exp = true;
  add("ssm_d", "D", "ssm_d", {c.ssm_heads});
  add("ssm_norm", "norm.weight", "ssm_norm.weight", {inner});
  add("ssm_out_proj", "out_proj.weight", "ssm_out.weight", {hidden, inner});
  if (c.ssm_proj_bias) add("ssm_out_bias", "out_proj.bias", "ssm_out.bias", {hidden});
}

void Mamba2Block::add_caches(std::vector<TensorSpec>& caches, const ModelConfig& config,
                             int64_t layer, ElementType element, int64_t slots) const {
  caches.push_back({fmt::format("conv_cache_{}", layer),
                    element,
                    {slots, 1, config.conv_kernel, conv_channels(config)},
                    Split::kNone});
  caches.push_back({fmt::format("ssm_cache_{}", layer),
                    element,
                    {slots, 1, 2, config.ssm_inner() * config.ssm_state},
                    Split::kNone});
}

Value Mamba2Block::emit(DecoderGraph& graph, int64_t l, Value x) const {
  const ModelConfig& c = graph.config();
  Block& b = graph.block();
  const int64_t tokens = graph.tokens(), n = graph.sequences(), rows = tokens / n;
  const int64_t inner = c.ssm_inner(), channels = conv_channels(c), heads = c.ssm_heads;
  const int64_t head_dim = c.ssm_head_dim, state = c.ssm_state, groups = c.ssm_groups;
  Value projected = linear(x, graph.layer_matrix(l, "ssm_in_proj"),
                           graph.optional_layer_weight(l, "ssm_in_bias"));
  auto columns = [&](Value v, int64_t begin, int64_t end) {
    return slice(v, {0, begin}, {tokens, end});
  };
  Value gate = columns(projected, 0, inner);
  Value conv_in = columns(projected, inner, inner + channels);
  Value time_step = columns(projected, inner + channels, inner + channels + heads);

  // The causal convolution over each channel's window of inputs, then SiLU.
  Value conv = activate(
      depthwise_conv(graph.recent_inputs(l, conv_in), graph.layer_weight(l, "ssm_conv_weight"),
                     graph.optional_layer_weight(l, "ssm_conv_bias")),
      Activation::kSilu);

  // Per sequence: x [N, heads, L, head_dim], B and C per head [N, heads, L, state].
  Value xs = transpose(reshape(columns(conv, 0, inner), {n, rows, heads, head_dim}), {0, 2, 1, 3});
  auto group_part = [&](int64_t i) {
    Value part = columns(conv, inner + i * groups * state, inner + (i + 1) * groups * state);
    return per_head(reshape(part, {n, rows, groups, state}), heads);
  };
  Value b_heads = group_part(0), c_heads = group_part(1);
  Value dt = softplus(time_step + broadcast_in_dim(to_f32(graph.layer_weight(l, "ssm_dt_bias")),
                                                   {tokens, heads}, {1}));
  dt = transpose(reshape(dt, {n, rows, heads}), {0, 2, 1});  // [N, heads, L]
  Value a = dt * broadcast_in_dim(to_f32(graph.layer_weight(l, "ssm_a")), dt.shape(), {1});
  Value h0 = reshape(graph.state_before(l), {n, heads, head_dim, state});
  ScanResult scan = selective_scan(xs, dt, a, b_heads, c_heads, h0, graph.valid_lengths());
  graph.store_state(l, reshape(scan.state, {n, heads * head_dim * state}));
  Value skip = xs * broadcast_in_dim(to_f32(graph.layer_weight(l, "ssm_d")), xs.shape(), {1});
  Value y = reshape(transpose(scan.y + skip, {0, 2, 1, 3}), {tokens, inner});

  // RMSNorm of y * SiLU(z) over each group's channels (norm_before_gate false).
  const int64_t group_width = inner / groups;
  Value gated = reshape(y * activate(gate, Activation::kSilu), {tokens, groups, group_width});
  Value mean =
      reduce_sum(gated * gated, {2}) / constant(b, TensorType(ElementType::kF32, {tokens, groups}),
                                                static_cast<double>(group_width));
  Value inv = rsqrt(mean + constant(b, mean.type(), c.rms_norm_eps));
  Value normed = reshape(gated * broadcast_in_dim(inv, gated.shape(), {0, 1}), {tokens, inner});
  normed =
      normed * broadcast_in_dim(to_f32(graph.layer_weight(l, "ssm_norm")), {tokens, inner}, {1});
  return linear(normed, graph.layer_matrix(l, "ssm_out_proj"),
                graph.optional_layer_weight(l, "ssm_out_bias"));
}

}  // namespace xlacel::models
