// A sparse mixture of experts (llama_layers.h, mixture_of_experts): the router's choice, then
// the chosen experts' MLPs run one of three ways by how many rows a graph has.
#include <algorithm>
#include <limits>

#include "models/llama_layers.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

// Rows per block where a graph groups its rows by expert (experts_by_row_blocks): the kernel's
// rows per pass over a weight row on AVX2.
constexpr int64_t kExpertBlockRows = 8;

}  // namespace

int64_t expert_slots(int64_t rows, int64_t top_k, int64_t experts) {
  return std::min(rows * top_k, experts);
}

int64_t expert_row_blocks(int64_t rows, int64_t top_k, int64_t experts) {
  if (rows * top_k < experts) return 0;
  // Each expert's rows padded to whole blocks: at most B - 1 more rows per expert.
  const int64_t blocks =
      (rows * top_k + experts * (kExpertBlockRows - 1) + kExpertBlockRows - 1) / kExpertBlockRows;
  return blocks * kExpertBlockRows < rows * experts ? blocks : 0;
}

namespace {

// Row `index` (i32 []) of stacked biases [E, out], as a vector.
std::optional<Value> bias_at(const std::optional<Value>& biases, Value index) {
  if (!biases) return std::nullopt;
  const int64_t out = biases->shape()[1];
  const Value zero = constant(index.block(), index.type(), 0.0);
  return reshape(dynamic_slice(*biases, {index, zero}, {1, out}), {out});
}

// Expert `index`'s gated MLP on `rows`.
Value expert_mlp(Value rows, const Experts& experts, Value index, const ExpertGate& how) {
  Value gate = linear(rows, expert_matrix(experts.gate, index), bias_at(experts.gate_bias, index));
  Value up = linear(rows, expert_matrix(experts.up, index), bias_at(experts.up_bias, index));
  Value gated;
  if (how.clamped_swiglu) {
    // GptOssExperts._apply_gate: gate.clamp(max=limit), up.clamp(-limit, limit),
    // (up + 1) * (gate * sigmoid(gate * alpha)).
    auto c = [&](double value) { return constant(rows.block(), gate.type(), value); };
    const auto [alpha, limit] = *how.clamped_swiglu;
    gate = minimum(gate, c(limit));
    up = maximum(minimum(up, c(limit)), c(-limit));
    gated = (up + c(1.0)) * (gate * logistic(gate * c(alpha)));
  } else {
    gated = activate(gate, how.activation) * up;
  }
  return linear(gated, expert_matrix(experts.down, index), bias_at(experts.down_bias, index));
}

// The router's choice: which experts each row chose (bool [T, E]) and their weights (f32 [T,
// E], 0 where not chosen).
struct Choice {
  Value chosen;
  Value weights;
};

Choice route(Value x, const Weight& router, const Routing& routing) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0], top_k = routing.top_k;
  const int64_t count = router.rows();
  const TensorType scores(ElementType::kF32, {tokens, count});
  Value logits = linear(x, router);
  if (routing.bias) {
    logits = logits + broadcast_like(to_f32(*routing.bias), scores.shape(), {1});
  }
  // softmax(router_logits, dtype=float32); the picks below follow it, or the logits themselves
  // (the same order) where the chosen logits get their own softmax.
  Value max = broadcast_like(reduce_max(logits, {1}), scores.shape(), {0});
  Value e = exponential(logits - max);
  Value probs = routing.softmax_of_chosen
                    ? logits
                    : e / broadcast_like(reduce_sum(e, {1}), scores.shape(), {0});
  // torch.topk, one pick at a time: the largest remaining probability, the lowest expert among
  // equals. `chosen` marks the experts picked; `total` sums their probabilities in topk order
  // (largest first), as router_top_value.sum(-1). (No stablehlo argmax here: IREE 3.13 cannot
  // distribute its two-operand reduce over a dimension this small.)
  const TensorType index_type(ElementType::kI32, scores.shape());
  // Expert e counts as count - 1 - e, so the largest marks the lowest expert.
  Value reversed = constant(b, index_type, static_cast<double>(count - 1)) - iota(b, index_type, 1);
  Value lowest = constant(b, scores, static_cast<double>(std::numeric_limits<float>::lowest()));
  Value remaining = tokens > 1 ? optimization_barrier(probs) : probs;
  std::optional<Value> chosen, total;
  for (int64_t i = 0; i < top_k; ++i) {
    Value best = reduce_max(remaining, {1});
    Value equal = compare(remaining, broadcast_like(best, scores.shape(), {0}), Direction::kEQ);
    Value first = reduce_max(select(equal, reversed, constant(b, index_type, -1.0)), {1});
    Value pick = compare(reversed, broadcast_like(first, scores.shape(), {0}), Direction::kEQ);
    chosen = chosen ? logical_or(*chosen, pick) : pick;
    total = total ? *total + best : best;
    remaining = select(pick, lowest, remaining);
    // Several rows' picks are computed one pick per kernel. IREE llvm-cpu would otherwise fuse the
    // whole chain of dependent reductions into one, whose codegen grows with it
    // (OptimizeTensorInsertExtractSlices): OLMoE-shaped prefill graphs (64 experts, top 8, 16
    // rows) took minutes to compile, nearly all of it in that one kernel (docs/PERFORMANCE.md,
    // "MoE router picks"). One row goes without, as a barrier per pick would cost a decode step a
    // split per pick and layer.
    if (tokens > 1 && i + 1 < top_k) remaining = optimization_barrier(remaining);
  }
  Value weights = probs;
  if (routing.softmax_of_chosen) {
    // softmax over the chosen logits: exp(l - the largest chosen, which is the row's largest)
    // over their sum.
    Value chosen_e = select(*chosen, e, constant(b, scores, 0.0));
    weights = chosen_e / broadcast_like(reduce_sum(chosen_e, {1}), scores.shape(), {0});
  } else if (routing.normalize) {
    weights = probs / broadcast_like(*total, scores.shape(), {0});
  }
  return {*chosen, select(*chosen, weights, constant(b, scores, 0.0))};
}

// f32 [n, m] or i32 counts: for each column, the sum of `values` over the rows before each row
// (`inclusive`: up to and with it), along `axis` 0 of values [n, ...m] (a prefix sum by a mask).
Value prefix_sums(Value values, bool inclusive) {
  Block& b = values.block();
  const int64_t n = values.shape()[0];
  std::vector<int64_t> shape = {n, n};
  const std::vector<int64_t> rest(values.shape().begin() + 1, values.shape().end());
  shape.insert(shape.end(), rest.begin(), rest.end());
  const TensorType pairs(ElementType::kI32, {n, n});
  // [before, at]: whether row `before` counts toward row `at`.
  Value counts =
      compare(iota(b, pairs, 0), iota(b, pairs, 1), inclusive ? Direction::kLE : Direction::kLT);
  std::vector<int64_t> value_dims = {0};
  for (std::size_t d = 0; d < rest.size(); ++d) value_dims.push_back(static_cast<int64_t>(d) + 2);
  Value spread = broadcast_in_dim(values, shape, value_dims);
  return reduce_sum(select(broadcast_in_dim(counts, shape, {0, 1}), spread,
                           constant(b, TensorType(values.element(), shape), 0.0)),
                    {0});
}

// Each row's k-th chosen expert in expert order, for k < top_k: where a row's choices are
// ([T, E] bool), as [top_k][T, E] masks.
std::vector<Value> nth_choices(Value chosen, int64_t top_k) {
  Block& b = chosen.block();
  const TensorType counts(ElementType::kI32, chosen.shape());
  Value ones = select(chosen, constant(b, counts, 1.0), constant(b, counts, 0.0));
  // The experts a row chose before each, counted along the experts' axis.
  Value before = transpose(prefix_sums(transpose(ones, {1, 0}), false), {1, 0});
  std::vector<Value> nth;
  for (int64_t k = 0; k < top_k; ++k) {
    nth.push_back(logical_and(
        chosen, compare(before, constant(b, counts, static_cast<double>(k)), Direction::kEQ)));
  }
  return nth;
}

// out + y * w per row, w f32 [T].
Value add_weighted(Value out, Value y, Value w) {
  return out + y * broadcast_like(w, y.shape(), {0});
}

// Every expert on every row, in expert order, times its column of the weights: rows that did not
// choose it weigh 0, which adds exactly 0.
Value every_expert(Value x, const Experts& experts, const Choice& choice, const ExpertGate& how) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0], count = choice.weights.shape()[1];
  const TensorType index(ElementType::kI32, {});
  Value out = constant(b, x.type(), 0.0);
  for (int64_t i = 0; i < count; ++i) {
    Value y = expert_mlp(x, experts, constant(b, index, static_cast<double>(i)), how);
    out = add_weighted(out, y, reshape(slice(choice.weights, {0, i}, {tokens, i + 1}), {tokens}));
  }
  return out;
}

// Fewer rows choose at most `slots` experts: those alone run, on every row, the k-th chosen
// expert (in expert order) in slot k, read at its index in the stacked weights. A slot no expert
// fills runs expert 0 at weight 0. One graph serves any choice without a conditional per expert
// (whose compile grew with the experts: 13 min for 6 layers of 128).
Value chosen_experts(Value x, const Experts& experts, const Choice& choice, int64_t slots,
                     const ExpertGate& how) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0], count = choice.weights.shape()[1];
  const TensorType scores(ElementType::kF32, choice.weights.shape());
  Value any =
      reduce_max(select(choice.chosen, constant(b, scores, 1.0), constant(b, scores, 0.0)), {0});
  // How many chosen experts come before each.
  Value rank = prefix_sums(any, false);
  // [slot, expert]: the expert fills the slot.
  const std::vector<int64_t> slot_shape = {slots, count};
  const TensorType slot_values(ElementType::kF32, slot_shape);
  Value fills = logical_and(
      compare(broadcast_like(rank, slot_shape, {1}),
              convert(iota(b, TensorType(ElementType::kI32, slot_shape), 0), ElementType::kF32),
              Direction::kEQ),
      compare(broadcast_like(any, slot_shape, {1}), constant(b, slot_values, 0.0), Direction::kGT));
  const TensorType slot_indices(ElementType::kI32, slot_shape);
  Value expert_of =
      reduce_max(select(fills, iota(b, slot_indices, 1), constant(b, slot_indices, 0.0)), {1});
  // Each row's weight of each slot's expert: [T, slot].
  const std::vector<int64_t> row_slot_expert = {tokens, slots, count};
  Value slot_weights =
      reduce_max(select(broadcast_like(fills, row_slot_expert, {1, 2}),
                        broadcast_like(choice.weights, row_slot_expert, {0, 2}),
                        constant(b, TensorType(ElementType::kF32, row_slot_expert), 0.0)),
                 {2});
  Value out = constant(b, x.type(), 0.0);
  for (int64_t k = 0; k < slots; ++k) {
    Value y = expert_mlp(x, experts, reshape(slice(expert_of, {k}, {k + 1}), {}), how);
    out = add_weighted(out, y, reshape(slice(slot_weights, {0, k}, {tokens, k + 1}), {tokens}));
  }
  return out;
}

// Many rows (prefill): each expert runs on the rows that chose it alone. The (row, expert) choices
// are laid out by expert, each expert's rows padded to whole blocks of kExpertBlockRows, and each
// of `blocks` blocks runs its expert (read at its index) on its rows; blocks past the last
// expert's run expert E - 1 (the index clamped) on row 0, and are never read. Then each row adds
// its chosen experts' results in expert order, times their weights: the sum every_expert makes,
// without the products of the weight-0 rows.
Value experts_by_row_blocks(Value x, const Experts& experts, const Choice& choice, int64_t top_k,
                            int64_t blocks, const ExpertGate& how) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0], count = choice.weights.shape()[1];
  const int64_t laid_out = blocks * kExpertBlockRows;
  const TensorType choices(ElementType::kI32, choice.chosen.shape());
  const TensorType experts_i32(ElementType::kI32, {count});
  auto i32 = [&](const TensorType& type, double value) { return constant(b, type, value); };
  Value ones = select(choice.chosen, i32(choices, 1.0), i32(choices, 0.0));
  // Each expert's rows, padded to whole blocks, and where its run ends.
  const double block = static_cast<double>(kExpertBlockRows);
  Value padded = (reduce_sum(ones, {0}) + i32(experts_i32, block - 1.0)) / i32(experts_i32, block) *
                 i32(experts_i32, block);
  Value end = prefix_sums(padded, true);
  // Where each choice sits: its expert's run, then the rows before it that chose the expert.
  Value at = broadcast_like(end - padded, choices.shape(), {1}) + prefix_sums(ones, false);
  // The row at each place (0 where none is): a scatter of the row numbers to the chosen places;
  // the others go past the end and are skipped.
  Value places = reshape(select(choice.chosen, at, i32(choices, static_cast<double>(laid_out))),
                         {tokens * count, 1});
  Value row_numbers = reshape(iota(b, choices, 0), {tokens * count});
  Value row_at = scatter_replace(
      i32(TensorType(ElementType::kI32, {laid_out}), 0.0), places, row_numbers,
      {.inserted_window_dims = {0}, .scatter_dims_to_operand_dims = {0}, .index_vector_dim = 1});
  Value laid_out_x = take(x, row_at);
  // Block k's expert: how many experts' runs end at or before its first place.
  const TensorType block_experts(ElementType::kI32, {blocks, count});
  Value block_starts = iota(b, block_experts, 0) * i32(block_experts, block);
  Value expert_of = reduce_sum(
      select(compare(broadcast_like(end, block_experts.shape(), {1}), block_starts, Direction::kLE),
             i32(block_experts, 1.0), i32(block_experts, 0.0)),
      {1});
  std::vector<Value> results;
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t first = k * kExpertBlockRows;
    Value rows = slice(laid_out_x, {first, 0}, {first + kExpertBlockRows, x.shape()[1]});
    results.push_back(expert_mlp(rows, experts, reshape(slice(expert_of, {k}, {k + 1}), {}), how));
  }
  Value laid_out_y = concatenate(results, 0);
  // Each row's n-th chosen expert's result and weight, added in expert order.
  Value out = constant(b, x.type(), 0.0);
  const TensorType scores(ElementType::kF32, choices.shape());
  for (const Value& nth : nth_choices(choice.chosen, top_k)) {
    Value place = reduce_sum(select(nth, at, i32(choices, 0.0)), {1});
    Value w = reduce_max(select(nth, choice.weights, constant(b, scores, 0.0)), {1});
    out = add_weighted(out, take(laid_out_y, place), w);
  }
  return out;
}

}  // namespace

Value mixture_of_experts(Value x, const Weight& router, const Experts& experts,
                         const Routing& routing, const ExpertGate& how) {
  const Choice choice = route(x, router, routing);
  const int64_t tokens = x.shape()[0], count = router.rows();
  const int64_t slots = expert_slots(tokens, routing.top_k, count);
  if (slots < count) return chosen_experts(x, experts, choice, slots, how);
  if (const int64_t blocks = expert_row_blocks(tokens, routing.top_k, count); blocks > 0) {
    return experts_by_row_blocks(x, experts, choice, routing.top_k, blocks, how);
  }
  return every_expert(x, experts, choice, how);
}

}  // namespace xlacel::models
