#pragma once
// stablehlo.reduce: the general (variadic) form with a body built by a callback, and the
// reductions models use: sum, max, and argmax (value + index, ties to the lower index).
#include <functional>
#include <span>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// Builds a reduce body: `body` is a fresh block whose arguments are (acc_0..acc_{N-1},
// x_0..x_{N-1}), each a 0-d tensor of the matching init value's type; return the N new
// accumulators (0-d, same types), computed with ops on those arguments only.
using ReduceBody = std::function<std::vector<Value>(Block& body, std::span<const Value> args)>;

// N inputs of one shape, N 0-d init values of the inputs' element types; `dimensions` (unique,
// in range) are reduced away. Results: N tensors of the remaining shape. The body must be
// associative and commutative: compilers reduce in any order.
std::vector<Value> reduce(const std::vector<Value>& inputs, const std::vector<Value>& init_values,
                          std::vector<int64_t> dimensions, const ReduceBody& body);

Value reduce_sum(Value operand, std::vector<int64_t> dimensions);  // init 0
Value reduce_max(Value operand, std::vector<int64_t> dimensions);  // init -inf (or lowest)

struct ArgMax {
  Value values;   // the maximum along the dimension
  Value indices;  // its index; ties pick the lower index, NaN counts as the largest (numpy)
};
// Reduces `dimension` of a float or integer operand; indices are of `index_type` (i32 or i64).
ArgMax argmax(Value operand, int64_t dimension, ElementType index_type = ElementType::kI32);

}  // namespace xlacel::stablehlo
