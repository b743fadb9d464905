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
// Blocks per pass of the loop that runs them: a runtime may run a pass's blocks side by side, and
// pays for each pass (IREE: a submission and a copy of what the loop carries).
constexpr int64_t kBlocksPerPass = 4;

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

// The experts as `block` reads them (a loop's body).
Experts captured_in(Block& block, const Experts& experts) {
  auto bias = [&](const std::optional<Value>& v) -> std::optional<Value> {
    if (!v) return std::nullopt;
    return block.capture(*v);
  };
  return {captured_in(block, experts.gate),
          captured_in(block, experts.up),
          captured_in(block, experts.down),
          bias(experts.gate_bias),
          bias(experts.up_bias),
          bias(experts.down_bias)};
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
// are laid out by expert, each expert's rows padded to whole blocks of kExpertBlockRows, and a
// loop runs the blocks, kBlocksPerPass a pass, while some expert's run is left: each block's
// expert (read at its index) on its rows, each result times its choice's weight added to its
// row. The blocks come in expert order and a block holds a row once at most, so each row adds its
// chosen experts' results in expert order: the sum every_expert makes, without the products of
// the weight-0 rows. Padding places (and blocks past the last expert's, which run expert E - 1,
// the index clamped) name row T: they read row T - 1 and add to an extra row T of the sum, which
// is cut off.
//
// `blocks` bounds the blocks any choice needs; the loop stops after those this one needs. Its
// body compiles once however many blocks there are (unrolled, Qwen3-30B-A3B's 176 blocks a layer
// took 18 min to compile on IREE at full depth). It carries the [T + 1, hidden] sum alone: IREE
// 3.13 copies a loop's carried tensors on every pass.
Value experts_by_row_blocks(Value x, const Experts& experts, const Choice& choice, int64_t blocks,
                            const ExpertGate& how) {
  Block& b = x.block();
  const int64_t tokens = x.shape()[0], hidden = x.shape()[1];
  const int64_t count = choice.weights.shape()[1];
  const int64_t pass_rows = kBlocksPerPass * kExpertBlockRows;
  const int64_t passes = (blocks + kBlocksPerPass - 1) / kBlocksPerPass;
  const int64_t laid_out = passes * pass_rows;
  const TensorType choices(ElementType::kI32, choice.chosen.shape());
  const TensorType experts_i32(ElementType::kI32, {count});
  const TensorType index(ElementType::kI32, {});
  auto i32 = [&](const TensorType& type, double value) { return constant(b, type, value); };
  Value ones = select(choice.chosen, i32(choices, 1.0), i32(choices, 0.0));
  // Each expert's rows, padded to whole blocks, and where its run ends.
  const double block = static_cast<double>(kExpertBlockRows);
  Value padded = (reduce_sum(ones, {0}) + i32(experts_i32, block - 1.0)) / i32(experts_i32, block) *
                 i32(experts_i32, block);
  Value end = prefix_sums(padded, true);
  // Where each choice sits: its expert's run, then the rows before it that chose the expert.
  Value at = broadcast_like(end - padded, choices.shape(), {1}) + prefix_sums(ones, false);
  // Each place's row and weight: the choices scattered to their places, the others to one place
  // past the layout, then cut off. Every index a scatter or gather here takes is in bounds: IREE
  // 3.13 neither skips nor clamps one that is not (an out-of-bounds scatter index corrupted
  // another sequence's rows: docs/PERFORMANCE.md, "MoE prefill blocks in a loop").
  Value places = reshape(select(choice.chosen, at, i32(choices, static_cast<double>(laid_out))),
                         {tokens * count, 1});
  const ScatterDimensions to_places = {
      .inserted_window_dims = {0}, .scatter_dims_to_operand_dims = {0}, .index_vector_dim = 1};
  Value row_at =
      slice(scatter_replace(
                i32(TensorType(ElementType::kI32, {laid_out + 1}), static_cast<double>(tokens)),
                places, reshape(iota(b, choices, 0), {tokens * count}), to_places),
            {0}, {laid_out});
  // (The weights behind a barrier, as the updates below: IREE would hold them on the stack.)
  Value weight_at = slice(
      scatter_replace(constant(b, TensorType(ElementType::kF32, {laid_out + 1}), 0.0), places,
                      optimization_barrier(reshape(choice.weights, {tokens * count})), to_places),
      {0}, {laid_out});
  // Block k's expert: how many experts' runs end at or before its first place.
  const TensorType block_experts(ElementType::kI32, {passes * kBlocksPerPass, count});
  Value block_starts = iota(b, block_experts, 0) * i32(block_experts, block);
  Value expert_of = reduce_sum(
      select(compare(broadcast_like(end, block_experts.shape(), {1}), block_starts, Direction::kLE),
             i32(block_experts, 1.0), i32(block_experts, 0.0)),
      {1});
  // The passes this choice needs: up to the end of the last expert's run.
  Value used = reshape(slice(end, {count - 1}, {count}), {});
  Value used_passes = (used + i32(index, static_cast<double>(pass_rows - 1))) /
                      i32(index, static_cast<double>(pass_rows));
  auto run_pass = [&](Block& body, const std::vector<Value>& carried) {
    const Value first = carried[0] * constant(body, index, static_cast<double>(pass_rows));
    Value rows = dynamic_slice(body.capture(row_at), {first}, {pass_rows});
    Value weights = dynamic_slice(body.capture(weight_at), {first}, {pass_rows});
    Value pass_experts =
        dynamic_slice(body.capture(expert_of),
                      {carried[0] * constant(body, index, static_cast<double>(kBlocksPerPass))},
                      {kBlocksPerPass});
    // Padding places' row T read as row T - 1, their results added to the sum's extra row T.
    Value pass_x = take(body.capture(x),
                        minimum(rows, constant(body, TensorType(ElementType::kI32, {pass_rows}),
                                               static_cast<double>(tokens - 1))));
    const Experts inside = captured_in(body, experts);
    Value out = carried[1];
    for (int64_t k = 0; k < kBlocksPerPass; ++k) {
      const int64_t at_row = k * kExpertBlockRows, end_row = at_row + kExpertBlockRows;
      Value block_rows = slice(rows, {at_row}, {end_row});
      Value y = expert_mlp(slice(pass_x, {at_row, 0}, {end_row, hidden}), inside,
                           reshape(slice(pass_experts, {k}, {k + 1}), {}), how);
      // Behind a barrier: IREE 3.13 fuses what makes a scatter's updates into it and holds them
      // on the stack (8 rows of 2880: over its 32 KiB limit).
      Value weighted = optimization_barrier(
          y * broadcast_like(slice(weights, {at_row}, {end_row}), y.shape(), {0}));
      out = scatter(out, reshape(block_rows, {kExpertBlockRows, 1}), weighted,
                    {.update_window_dims = {1},
                     .inserted_window_dims = {0},
                     .scatter_dims_to_operand_dims = {0},
                     .index_vector_dim = 1},
                    [](Block&, Value current, Value update) { return current + update; });
    }
    return std::vector<Value>{out};
  };
  Value sum = counted_loop(
      used_passes, {constant(b, TensorType(x.element(), {tokens + 1, hidden}), 0.0)}, run_pass)[0];
  return slice(sum, {0, 0}, {tokens, hidden});
}

}  // namespace

Value mixture_of_experts(Value x, const Weight& router, const Experts& experts,
                         const Routing& routing, const ExpertGate& how) {
  const Choice choice = route(x, router, routing);
  const int64_t tokens = x.shape()[0], count = router.rows();
  const int64_t slots = expert_slots(tokens, routing.top_k, count);
  if (slots < count) return chosen_experts(x, experts, choice, slots, how);
  if (const int64_t blocks = expert_row_blocks(tokens, routing.top_k, count); blocks > 0) {
    return experts_by_row_blocks(x, experts, choice, blocks, how);
  }
  return every_expert(x, experts, choice, how);
}

}  // namespace xlacel::models
