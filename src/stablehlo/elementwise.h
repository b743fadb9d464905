#pragma once
// Elementwise ops: operands of one type (no implicit broadcasting: use broadcast_in_dim), the
// result of that type; compare returns i1, convert changes the element type, select picks.
#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// Any element type (i1 included: add is or, multiply is and).
Value add(Value lhs, Value rhs);
Value multiply(Value lhs, Value rhs);
Value maximum(Value lhs, Value rhs);
Value minimum(Value lhs, Value rhs);
// Integer or float.
Value subtract(Value lhs, Value rhs);
Value divide(Value lhs, Value rhs);
Value remainder(Value lhs, Value rhs);  // C's %: the sign of lhs
Value power(Value lhs, Value rhs);
Value negate(Value operand);
// i1 or integer: logical for i1, bitwise otherwise.
Value logical_and(Value lhs, Value rhs);
Value logical_or(Value lhs, Value rhs);
Value logical_not(Value operand);
// Integer only: lhs's bits shifted right (left) by rhs, zeros shifted in (whatever the sign); a
// shift by the width or more gives 0.
Value shift_right_logical(Value lhs, Value rhs);
Value shift_left(Value lhs, Value rhs);
// Float only.
Value exponential(Value operand);
Value log(Value operand);
Value rsqrt(Value operand);
Value sqrt(Value operand);
Value tanh(Value operand);
Value round_nearest_even(Value operand);  // to the nearest integer, ties to even
Value logistic(Value operand);            // 1 / (1 + exp(-x))
Value sine(Value operand);
Value cosine(Value operand);

inline Value operator+(Value a, Value b) {
  return add(a, b);
}
inline Value operator-(Value a, Value b) {
  return subtract(a, b);
}
inline Value operator*(Value a, Value b) {
  return multiply(a, b);
}
inline Value operator/(Value a, Value b) {
  return divide(a, b);
}
inline Value operator-(Value a) {
  return negate(a);
}

enum class Direction { kEQ, kNE, kLT, kLE, kGT, kGE };
// How compare orders elements. kDefault picks FLOAT for floats, SIGNED for signed integers and
// UNSIGNED for unsigned integers and i1. kTotalOrder (floats only) orders -NaN < -inf < ... <
// -0 < +0 < ... < inf < NaN.
enum class CompareType { kDefault, kFloat, kTotalOrder, kSigned, kUnsigned };
// Result: i1 of the operands' shape.
Value compare(Value lhs, Value rhs, Direction direction,
              CompareType compare_type = CompareType::kDefault);

// pred (i1, scalar or of the operands' shape) ? on_true : on_false, elementwise.
Value select(Value pred, Value on_true, Value on_false);

// Element type conversion (float -> int rounds toward zero; -> i1 is "!= 0").
Value convert(Value operand, ElementType element);
// The same bits read as `element`, of the operand's bit width (i32 <-> f32).
Value bitcast_convert(Value operand, ElementType element);

}  // namespace xlacel::stablehlo
