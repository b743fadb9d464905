#include "stablehlo/elementwise.h"

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {
namespace {

enum class Accepts { kAny, kInt, kIntOrFloat, kBoolOrInt, kFloat };

void check_element(std::string_view op, Accepts accepts, std::span<const Value> operands) {
  ElementType e = operands.front().element();
  bool ok = true;
  std::string_view wanted;
  switch (accepts) {
    case Accepts::kAny:
      break;
    case Accepts::kInt:
      ok = is_integer(e);
      wanted = "integer";
      break;
    case Accepts::kIntOrFloat:
      ok = is_integer(e) || is_float(e);
      wanted = "integer or float";
      break;
    case Accepts::kBoolOrInt:
      ok = is_bool(e) || is_integer(e);
      wanted = "i1 or integer";
      break;
    case Accepts::kFloat:
      ok = is_float(e);
      wanted = "float";
      break;
  }
  if (!ok) build_fail(op, "element type must be {}, got ({})", wanted, detail::types_of(operands));
}

Value binary(std::string_view op, Accepts accepts, Value lhs, Value rhs) {
  std::vector<Value> operands{lhs, rhs};
  if (!lhs.valid() || !rhs.valid()) build_fail(op, "empty operand");
  if (lhs.type() != rhs.type()) {
    build_fail(op, "operand types differ: ({}) (no implicit broadcasting; use broadcast_in_dim)",
               detail::types_of(operands));
  }
  check_element(op, accepts, operands);
  return detail::emit(std::string(op), std::move(operands), {}, lhs.type());
}

Value unary(std::string_view op, Accepts accepts, Value operand) {
  std::vector<Value> operands{operand};
  if (!operand.valid()) build_fail(op, "empty operand");
  check_element(op, accepts, operands);
  return detail::emit(std::string(op), std::move(operands), {}, operand.type());
}

std::string_view direction_name(Direction direction) {
  switch (direction) {
    case Direction::kEQ:
      return "EQ";
    case Direction::kNE:
      return "NE";
    case Direction::kLT:
      return "LT";
    case Direction::kLE:
      return "LE";
    case Direction::kGT:
      return "GT";
    case Direction::kGE:
      return "GE";
  }
  return "?";
}

}  // namespace

Value add(Value lhs, Value rhs) {
  return binary("stablehlo.add", Accepts::kAny, lhs, rhs);
}
Value multiply(Value lhs, Value rhs) {
  return binary("stablehlo.multiply", Accepts::kAny, lhs, rhs);
}
Value maximum(Value lhs, Value rhs) {
  return binary("stablehlo.maximum", Accepts::kAny, lhs, rhs);
}
Value minimum(Value lhs, Value rhs) {
  return binary("stablehlo.minimum", Accepts::kAny, lhs, rhs);
}
Value subtract(Value lhs, Value rhs) {
  return binary("stablehlo.subtract", Accepts::kIntOrFloat, lhs, rhs);
}
Value divide(Value lhs, Value rhs) {
  return binary("stablehlo.divide", Accepts::kIntOrFloat, lhs, rhs);
}
Value remainder(Value lhs, Value rhs) {
  return binary("stablehlo.remainder", Accepts::kIntOrFloat, lhs, rhs);
}
Value power(Value lhs, Value rhs) {
  return binary("stablehlo.power", Accepts::kIntOrFloat, lhs, rhs);
}
Value negate(Value operand) {
  return unary("stablehlo.negate", Accepts::kIntOrFloat, operand);
}
Value logical_and(Value lhs, Value rhs) {
  return binary("stablehlo.and", Accepts::kBoolOrInt, lhs, rhs);
}
Value logical_or(Value lhs, Value rhs) {
  return binary("stablehlo.or", Accepts::kBoolOrInt, lhs, rhs);
}
Value logical_not(Value operand) {
  return unary("stablehlo.not", Accepts::kBoolOrInt, operand);
}
Value shift_right_logical(Value lhs, Value rhs) {
  return binary("stablehlo.shift_right_logical", Accepts::kInt, lhs, rhs);
}
Value shift_left(Value lhs, Value rhs) {
  return binary("stablehlo.shift_left", Accepts::kInt, lhs, rhs);
}
Value exponential(Value operand) {
  return unary("stablehlo.exponential", Accepts::kFloat, operand);
}
Value log(Value operand) {
  return unary("stablehlo.log", Accepts::kFloat, operand);
}
Value rsqrt(Value operand) {
  return unary("stablehlo.rsqrt", Accepts::kFloat, operand);
}
Value sqrt(Value operand) {
  return unary("stablehlo.sqrt", Accepts::kFloat, operand);
}
Value tanh(Value operand) {
  return unary("stablehlo.tanh", Accepts::kFloat, operand);
}
Value round_nearest_even(Value operand) {
  return unary("stablehlo.round_nearest_even", Accepts::kFloat, operand);
}
Value logistic(Value operand) {
  return unary("stablehlo.logistic", Accepts::kFloat, operand);
}
Value sine(Value operand) {
  return unary("stablehlo.sine", Accepts::kFloat, operand);
}
Value cosine(Value operand) {
  return unary("stablehlo.cosine", Accepts::kFloat, operand);
}

Value compare(Value lhs, Value rhs, Direction direction, CompareType compare_type) {
  constexpr std::string_view kOp = "stablehlo.compare";
  std::vector<Value> operands{lhs, rhs};
  if (!lhs.valid() || !rhs.valid()) build_fail(kOp, "empty operand");
  if (lhs.type() != rhs.type())
    build_fail(kOp, "operand types differ: ({})", detail::types_of(operands));
  ElementType e = lhs.element();
  if (compare_type == CompareType::kDefault) {
    compare_type = is_float(e)            ? CompareType::kFloat
                   : is_signed_integer(e) ? CompareType::kSigned
                                          : CompareType::kUnsigned;
  }
  std::string_view type_name;
  bool ok = false;
  switch (compare_type) {
    case CompareType::kFloat:
      type_name = "FLOAT", ok = is_float(e);
      break;
    case CompareType::kTotalOrder:
      type_name = "TOTALORDER", ok = is_float(e);
      break;
    case CompareType::kSigned:
      type_name = "SIGNED", ok = is_signed_integer(e);
      break;
    case CompareType::kUnsigned:
      type_name = "UNSIGNED", ok = is_unsigned_integer(e) || is_bool(e);
      break;
    case CompareType::kDefault:
      break;
  }
  if (!ok) {
    build_fail(kOp, "comparison type {} does not apply to ({})", type_name,
               detail::types_of(operands));
  }
  return detail::emit(std::string(kOp), std::move(operands),
                      {{"comparison_direction", fmt::format("#stablehlo<comparison_direction {}>",
                                                            direction_name(direction))},
                       {"compare_type", fmt::format("#stablehlo<comparison_type {}>", type_name)}},
                      lhs.type().with_element(ElementType::kI1));
}

Value select(Value pred, Value on_true, Value on_false) {
  constexpr std::string_view kOp = "stablehlo.select";
  std::vector<Value> operands{pred, on_true, on_false};
  if (!pred.valid() || !on_true.valid() || !on_false.valid()) build_fail(kOp, "empty operand");
  if (on_true.type() != on_false.type()) {
    build_fail(kOp, "on_true and on_false types differ: ({})", detail::types_of(operands));
  }
  if (pred.element() != ElementType::kI1) {
    build_fail(kOp, "pred must be i1, got ({})", detail::types_of(operands));
  }
  if (pred.rank() != 0 && pred.shape() != on_true.shape()) {
    build_fail(kOp, "pred must be a scalar or of the operands' shape: ({})",
               detail::types_of(operands));
  }
  return detail::emit(std::string(kOp), std::move(operands), {}, on_true.type());
}

Value convert(Value operand, ElementType element) {
  if (!operand.valid()) build_fail("stablehlo.convert", "empty operand");
  return detail::emit("stablehlo.convert", {operand}, {}, operand.type().with_element(element));
}

Value bitcast_convert(Value operand, ElementType element) {
  if (!operand.valid()) build_fail("stablehlo.bitcast_convert", "empty operand");
  if (bit_width(operand.element()) != bit_width(element)) {
    build_fail("stablehlo.bitcast_convert", "{} to {}: widths differ", to_string(operand.element()),
               to_string(element));
  }
  return detail::emit("stablehlo.bitcast_convert", {operand}, {},
                      operand.type().with_element(element));
}

}  // namespace xlacel::stablehlo
