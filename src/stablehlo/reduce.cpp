#include "stablehlo/reduce.h"

#include <limits>

#include "stablehlo/constant.h"
#include "stablehlo/data_movement.h"
#include "stablehlo/detail.h"
#include "stablehlo/elementwise.h"

namespace xlacel::stablehlo {
namespace {

constexpr std::string_view kReduce = "stablehlo.reduce";

double lowest(ElementType element) {
  switch (element) {
    case ElementType::kI1:
      return 0;
    case ElementType::kI8:
      return -128;
    case ElementType::kI32:
      return std::numeric_limits<int32_t>::min();
    case ElementType::kI64:
      return -9223372036854775808.0;
    case ElementType::kUI8:
    case ElementType::kUI32:
      return 0;
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

}  // namespace

std::vector<Value> reduce(const std::vector<Value>& inputs, const std::vector<Value>& init_values,
                          std::vector<int64_t> dimensions, const ReduceBody& body) {
  std::vector<Value> operands = inputs;
  operands.insert(operands.end(), init_values.begin(), init_values.end());
  if (inputs.empty()) build_fail(kReduce, "no inputs");
  for (const Value& v : operands) {
    if (!v.valid()) build_fail(kReduce, "empty operand");
  }
  if (inputs.size() != init_values.size()) {
    build_fail(kReduce, "{} inputs but {} init values: ({})", inputs.size(), init_values.size(),
               detail::types_of(operands));
  }
  const TensorType& first = inputs.front().type();
  std::vector<TensorType> scalar_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() != first.shape()) {
      build_fail(kReduce, "inputs differ in shape: ({})", detail::types_of(operands));
    }
    TensorType scalar(inputs[i].element(), {});
    if (init_values[i].type() != scalar) {
      build_fail(kReduce, "init value #{} must be {} for input {}: ({})", i, scalar.str(),
                 inputs[i].type().str(), detail::types_of(operands));
    }
    scalar_types.push_back(scalar);
  }
  detail::check_axes(kReduce, "dimensions", dimensions, first.rank(), operands);

  auto region = std::make_unique<Block>(inputs.front().block().function(), "stablehlo.return");
  std::vector<Value> args;
  for (int pass = 0; pass < 2; ++pass) {
    for (const TensorType& type : scalar_types) args.push_back(region->add_argument(type));
  }
  std::vector<Value> returned = body(*region, args);
  std::vector<TensorType> returned_types;
  for (const Value& v : returned) {
    if (!v.valid() || &v.block() != region.get()) {
      build_fail(kReduce, "the body returned a value defined outside the body");
    }
    returned_types.push_back(v.type());
  }
  if (returned_types != scalar_types) {
    build_fail(kReduce, "the body returns ({}) but must return ({}) for inputs ({})",
               join_types(returned_types), join_types(scalar_types), detail::types_of(inputs));
  }
  region->set_terminator(std::move(returned));

  std::vector<int64_t> shape;
  for (int64_t i = 0; i < first.rank(); ++i) {
    if (!detail::contains(dimensions, i)) shape.push_back(first.dim(i));
  }
  std::vector<TensorType> result_types;
  for (const TensorType& type : scalar_types) result_types.push_back(type.with_shape(shape));
  Operation op;
  op.name = kReduce;
  op.operands = std::move(operands);
  op.attributes["dimensions"] = detail::i64_array(dimensions);
  op.regions.push_back(std::move(region));
  return inputs.front().block().append(std::move(op), result_types);
}

Value reduce_sum(Value operand, std::vector<int64_t> dimensions) {
  if (!operand.valid()) build_fail(kReduce, "empty operand");
  Value zero = scalar(operand.block(), operand.element(), 0);
  return reduce({operand}, {zero}, std::move(dimensions),
                [](Block&, std::span<const Value> a) -> std::vector<Value> {
                  return {add(a[0], a[1])};
                })
      .front();
}

Value reduce_max(Value operand, std::vector<int64_t> dimensions) {
  if (!operand.valid()) build_fail(kReduce, "empty operand");
  Value init = scalar(operand.block(), operand.element(), lowest(operand.element()));
  return reduce({operand}, {init}, std::move(dimensions),
                [](Block&, std::span<const Value> a) -> std::vector<Value> {
                  return {maximum(a[0], a[1])};
                })
      .front();
}

ArgMax argmax(Value operand, int64_t dimension, ElementType index_type) {
  if (!operand.valid()) build_fail(kReduce, "empty operand");
  if (index_type != ElementType::kI32 && index_type != ElementType::kI64) {
    build_fail(kReduce, "argmax index type must be i32 or i64, got {}", to_string(index_type));
  }
  if (!is_float(operand.element()) && !is_integer(operand.element())) {
    build_fail(kReduce, "argmax needs a float or integer operand, got {}", operand.type().str());
  }
  if (dimension < 0 || dimension >= operand.rank()) {
    build_fail(kReduce, "argmax dimension {} out of range for {}", dimension, operand.type().str());
  }
  // Two plain reductions, the maximum and then the lowest index holding it, rather than one
  // reduction of (value, index) pairs: compilers vectorize these, and not the pair's select
  // chain, which made a large vocabulary's argmax a visible part of a decode step
  // (docs/PERFORMANCE.md, "argmax"). The same answer: maximum propagates NaN, and a NaN maximum
  // picks the first NaN (numpy).
  Block& block = operand.block();
  const std::vector<int64_t> shape = operand.type().shape();
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (i != dimension) kept.push_back(i);
  }
  Value values = reduce_max(operand, {dimension});
  Value spread = broadcast_in_dim(values, shape, kept);
  Value hit = compare(operand, spread, Direction::kEQ);
  if (is_float(operand.element())) {
    Value both_nan = logical_and(compare(operand, operand, Direction::kNE),
                                 compare(spread, spread, Direction::kNE));
    hit = logical_or(hit, both_nan);
  }
  // Past every index: what a position that is not the maximum contributes.
  const double past = static_cast<double>(shape[dimension]);
  const TensorType index_tensor = operand.type().with_element(index_type);
  Value candidates =
      select(hit, iota(block, index_tensor, dimension), constant(block, index_tensor, past));
  Value indices = reduce({candidates}, {scalar(block, index_type, past)}, {dimension},
                         [](Block&, std::span<const Value> a) -> std::vector<Value> {
                           return {minimum(a[0], a[1])};
                         })
                      .front();
  return {values, indices};
}

}  // namespace xlacel::stablehlo
