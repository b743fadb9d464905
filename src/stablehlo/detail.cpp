#include "stablehlo/detail.h"

#include <algorithm>
#include <set>

namespace xlacel::stablehlo::detail {

std::string i64_array(std::span<const int64_t> values) {
  if (values.empty()) return "array<i64>";
  return fmt::format("array<i64: {}>", fmt::join(values, ", "));
}

std::string int_list(std::span<const int64_t> values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string types_of(std::span<const Value> values) {
  std::vector<TensorType> types;
  for (const Value& v : values) types.push_back(v.type());
  return join_types(types);
}

Operation operation(std::string name, std::vector<Value> operands,
                    std::map<std::string, std::string> attributes) {
  Operation op;
  op.name = std::move(name);
  op.operands = std::move(operands);
  op.attributes = std::move(attributes);
  return op;
}

Value emit(Block& block, std::string name, std::vector<Value> operands,
           std::map<std::string, std::string> attributes, TensorType result) {
  return block
      .append(operation(std::move(name), std::move(operands), std::move(attributes)),
              {std::move(result)})
      .front();
}

Value emit(std::string name, std::vector<Value> operands,
           std::map<std::string, std::string> attributes, TensorType result) {
  return emit(operation(std::move(name), std::move(operands), std::move(attributes)),
              std::move(result));
}

Value emit(Operation op, TensorType result) {
  if (op.operands.empty() || !op.operands.front().valid()) build_fail(op.name, "missing operand");
  Block& block = op.operands.front().block();
  return block.append(std::move(op), {std::move(result)}).front();
}

void check_axes(std::string_view op, std::string_view what, std::span<const int64_t> axes,
                int64_t rank, std::span<const Value> operands) {
  std::set<int64_t> seen;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank) {
      build_fail(op, "{} {} has dimension {} out of range [0, {}) for ({})", what, int_list(axes),
                 axis, rank, types_of(operands));
    }
    if (!seen.insert(axis).second) {
      build_fail(op, "{} {} repeats dimension {} for ({})", what, int_list(axes), axis,
                 types_of(operands));
    }
  }
}

bool is_sorted_unique(std::span<const int64_t> axes) {
  return std::adjacent_find(axes.begin(), axes.end(),
                            [](int64_t a, int64_t b) { return a >= b; }) == axes.end();
}

bool contains(std::span<const int64_t> axes, int64_t axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

}  // namespace xlacel::stablehlo::detail
