#pragma once
// Internal helpers shared by the op families: attribute text and common operand checks.
#include <map>
#include <span>
#include <string>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo::detail {

// array<i64: 1, 2> (array<i64> when empty): the DenseI64ArrayAttr syntax.
std::string i64_array(std::span<const int64_t> values);
// [1, 2]: the list syntax inside #stablehlo.dot<...> and #stablehlo.gather<...>.
std::string int_list(std::span<const int64_t> values);
// "tensor<2xf32>, tensor<i32>": the types of `values`, for messages.
std::string types_of(std::span<const Value> values);

// Appends one single-result op to the block of `operands` (or `block` when there are none).
Value emit(Block& block, std::string name, std::vector<Value> operands,
           std::map<std::string, std::string> attributes, TensorType result);
Value emit(std::string name, std::vector<Value> operands,
           std::map<std::string, std::string> attributes, TensorType result);
// The same for an op already made (operation(), then its flags set).
Value emit(Operation op, TensorType result);
// An op of `name` with these operands and attributes, not yet in a block.
Operation operation(std::string name, std::vector<Value> operands,
                    std::map<std::string, std::string> attributes);

// Throws unless every axis is in [0, rank) and no axis repeats; `what` names the attribute.
void check_axes(std::string_view op, std::string_view what, std::span<const int64_t> axes,
                int64_t rank, std::span<const Value> operands);
bool is_sorted_unique(std::span<const int64_t> axes);
bool contains(std::span<const int64_t> axes, int64_t axis);

}  // namespace xlacel::stablehlo::detail
