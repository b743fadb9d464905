#include "stablehlo/control_flow.h"

#include <memory>

#include "stablehlo/detail.h"
#include "stablehlo/ops.h"

namespace xlacel::stablehlo {

namespace {

constexpr std::string_view kIf = "stablehlo.if";
constexpr std::string_view kWhile = "stablehlo.while";

// Ends a region built in `region`: it returns `returned`, whose types it puts in `types`, and
// may have captured values of `outer` alone.
void end_region(std::string_view op, Block& outer, Block& region, const char* which,
                const std::vector<Value>& returned, std::vector<TensorType>& types) {
  for (const Value& v : region.captured()) {
    if (&v.block() != &outer) {
      build_fail(op, "the {} captures {} from a block other than the op's", which, v.type().str());
    }
  }
  region.set_terminator(returned);
  types.clear();
  for (const Value& v : returned) types.push_back(v.type());
}

std::unique_ptr<Block> build_branch(Block& outer, const Branch& build, const char* which,
                                    std::vector<TensorType>& types) {
  auto branch = std::make_unique<Block>(outer.function(), "stablehlo.return");
  end_region(kIf, outer, *branch, which, build(*branch), types);
  return branch;
}

// A loop's condition or body: a block whose arguments are the carried values.
std::unique_ptr<Block> build_loop_block(Block& outer, const std::vector<TensorType>& carried,
                                        const LoopBlock& build, const char* which,
                                        std::vector<TensorType>& types) {
  auto block = std::make_unique<Block>(outer.function(), "stablehlo.return");
  std::vector<Value> arguments;
  for (const TensorType& type : carried) arguments.push_back(block->add_argument(type));
  end_region(kWhile, outer, *block, which, build(*block, arguments), types);
  return block;
}

}  // namespace

std::vector<Value> conditional(Value pred, const Branch& then_branch, const Branch& else_branch) {
  if (!pred.valid()) build_fail(kIf, "empty predicate");
  if (pred.type() != TensorType(ElementType::kI1, {})) {
    build_fail(kIf, "the predicate must be tensor<i1>, not {}", pred.type().str());
  }
  Block& outer = pred.block();
  std::vector<TensorType> then_types, else_types;
  Operation op;
  op.name = kIf;
  op.operands = {pred};
  op.regions.push_back(build_branch(outer, then_branch, "then branch", then_types));
  op.regions.push_back(build_branch(outer, else_branch, "else branch", else_types));
  if (then_types != else_types) {
    build_fail(kIf, "the branches return ({}) and ({})", join_types(then_types),
               join_types(else_types));
  }
  return outer.append(std::move(op), then_types);
}

std::vector<Value> while_loop(const std::vector<Value>& initial, const LoopBlock& condition,
                              const LoopBlock& body) {
  if (initial.empty()) build_fail(kWhile, "no carried values");
  Block& outer = initial.front().block();
  std::vector<TensorType> carried;
  for (const Value& v : initial) carried.push_back(v.type());
  std::vector<TensorType> condition_types, body_types;
  Operation op;
  op.name = kWhile;
  op.operands = initial;
  op.regions.push_back(build_loop_block(outer, carried, condition, "condition", condition_types));
  if (condition_types != std::vector<TensorType>{TensorType(ElementType::kI1, {})}) {
    build_fail(kWhile, "the condition must return one tensor<i1>, not ({})",
               join_types(condition_types));
  }
  op.regions.push_back(build_loop_block(outer, carried, body, "body", body_types));
  if (body_types != carried) {
    build_fail(kWhile, "the body returns ({}) but carries ({})", join_types(body_types),
               join_types(carried));
  }
  return outer.append(std::move(op), carried);
}

std::vector<Value> counted_loop(int64_t count, const std::vector<Value>& initial,
                                const LoopBlock& body) {
  if (initial.empty()) build_fail(kWhile, "a counted loop needs a block to live in");
  const TensorType counter(ElementType::kI32, {});
  return counted_loop(constant(initial.front().block(), counter, static_cast<double>(count)),
                      initial, body);
}

std::vector<Value> counted_loop(Value count, const std::vector<Value>& initial,
                                const LoopBlock& body) {
  const TensorType counter(ElementType::kI32, {});
  if (count.type() != counter) {
    build_fail(kWhile, "a loop's count must be tensor<i32>, not {}", count.type().str());
  }
  std::vector<Value> carried = {constant(count.block(), counter, 0.0)};
  carried.insert(carried.end(), initial.begin(), initial.end());
  auto below_count = [&](Block& block, const std::vector<Value>& values) -> std::vector<Value> {
    return {compare(values[0], block.capture(count), Direction::kLT)};
  };
  auto step = [&](Block& block, const std::vector<Value>& values) -> std::vector<Value> {
    std::vector<Value> next = body(block, values);
    next.insert(next.begin(), values[0] + constant(block, counter, 1.0));
    return next;
  };
  std::vector<Value> results = while_loop(carried, below_count, step);
  results.erase(results.begin());
  return results;
}

}  // namespace xlacel::stablehlo
