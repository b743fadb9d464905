#include "stablehlo/constant.h"

#include "common/float16.h"

#include <bit>
#include <cmath>
#include <limits>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {
namespace {

constexpr std::string_view kConstant = "stablehlo.constant";

float to_f32(double value) {
  if (std::isnan(value)) return std::numeric_limits<float>::quiet_NaN();
  if (std::fabs(value) > static_cast<double>(std::numeric_limits<float>::max())) {
    return std::signbit(value) ? -std::numeric_limits<float>::infinity()
                               : std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(value);
}

// The literal of one element in a dense attribute.
std::string element_literal(ElementType element, double value) {
  if (is_bool(element)) return value != 0 ? "true" : "false";
  if (!is_float(element)) return fmt::format("{}", static_cast<int64_t>(value));
  if (!std::isfinite(value)) {
    return fmt::format("0x{:0{}X}", element_bits(element, value), bit_width(element) / 4);
  }
  // Shortest decimal that round-trips the double (which holds the element value exactly); MLIR
  // float literals need a '.' before any exponent.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) {
    text += ".0";
  } else if (text.find('.') == std::string::npos) {
    text.insert(text.find('e'), ".0");
  }
  return text;
}

double integer_value(const TensorType& type, double value) {
  if (std::trunc(value) != value) {
    build_fail(kConstant, "{} is not an integer, for {}", value, type.str());
  }
  return value;
}

void check_integer_range(const TensorType& type, int64_t value) {
  int64_t lo = 0;
  int64_t hi = 0;
  switch (type.element()) {
    case ElementType::kI1:
      hi = 1;
      break;
    case ElementType::kI8:
      lo = -128, hi = 127;
      break;
    case ElementType::kUI8:
      hi = 255;
      break;
    case ElementType::kI32:
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      break;
    case ElementType::kUI32:
      hi = std::numeric_limits<uint32_t>::max();
      break;
    case ElementType::kI64:
      lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
      break;
    default:
      return;
  }
  if (value < lo || value > hi)
    build_fail(kConstant, "{} is out of range for {}", value, type.str());
}

void print_nested(std::string& out, const std::vector<std::string>& literals,
                  const std::vector<int64_t>& shape, size_t axis, size_t& next) {
  if (axis == shape.size()) {
    out += literals[next++];
    return;
  }
  out += '[';
  for (int64_t i = 0; i < shape[axis]; ++i) {
    if (i > 0) out += ", ";
    print_nested(out, literals, shape, axis + 1, next);
  }
  out += ']';
}

// dense<...> : tensor<...> from the elements' (already rounded) values.
std::string dense_text(const TensorType& type, const std::vector<double>& values,
                       const std::vector<int64_t>& ints) {
  bool use_ints = !is_float(type.element());
  size_t n = use_ints ? ints.size() : values.size();
  std::string body;
  if (static_cast<int64_t>(n) > kHexConstantThreshold && !is_bool(type.element())) {
    int bytes = bit_width(type.element()) / 8;
    body = "\"0x";
    for (size_t i = 0; i < n; ++i) {
      uint64_t bits =
          use_ints ? static_cast<uint64_t>(ints[i]) : element_bits(type.element(), values[i]);
      for (int b = 0; b < bytes; ++b) body += fmt::format("{:02X}", (bits >> (8 * b)) & 0xFFu);
    }
    body += '"';
  } else {
    std::vector<std::string> literals;
    for (size_t i = 0; i < n; ++i) {
      literals.push_back(use_ints ? (is_bool(type.element()) ? (ints[i] ? "true" : "false")
                                                             : fmt::format("{}", ints[i]))
                                  : element_literal(type.element(), values[i]));
    }
    size_t next = 0;
    print_nested(body, literals, type.shape(), 0, next);
  }
  return fmt::format("dense<{}> : {}", body, type.str());
}

Value emit_constant(Block& block, const TensorType& type, std::string dense) {
  return detail::emit(block, std::string(kConstant), {}, {{"value", std::move(dense)}}, type);
}

}  // namespace

double round_to_element(ElementType element, double value) {
  switch (element) {
    case ElementType::kF32:
      return static_cast<double>(to_f32(value));
    case ElementType::kBF16: {
      uint32_t bits = static_cast<uint32_t>(float_to_bfloat16(to_f32(value))) << 16;
      return static_cast<double>(std::bit_cast<float>(bits));
    }
    case ElementType::kF16:
      return static_cast<double>(half_to_float(float_to_half(to_f32(value))));
    default:
      return value;
  }
}

uint64_t element_bits(ElementType element, double value) {
  switch (element) {
    case ElementType::kF32:
      return std::bit_cast<uint32_t>(to_f32(value));
    case ElementType::kBF16:
      return float_to_bfloat16(to_f32(value));
    case ElementType::kF16:
      return float_to_half(to_f32(value));
    default: {
      uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(value));
      int width = bit_width(element);
      return width >= 64 ? bits : bits & ((uint64_t{1} << width) - 1);
    }
  }
}

Value constant(Block& block, const TensorType& type, double value) {
  if (is_float(type.element())) {
    return emit_constant(
        block, type,
        fmt::format("dense<{}> : {}",
                    element_literal(type.element(), round_to_element(type.element(), value)),
                    type.str()));
  }
  int64_t integer = static_cast<int64_t>(integer_value(type, value));
  check_integer_range(type, integer);
  return emit_constant(
      block, type,
      fmt::format("dense<{}> : {}", element_literal(type.element(), static_cast<double>(integer)),
                  type.str()));
}

Value constant(Block& block, const TensorType& type, const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != type.num_elements()) {
    build_fail(kConstant, "{} values for {} ({} elements)", values.size(), type.str(),
               type.num_elements());
  }
  if (!is_float(type.element())) {
    std::vector<int64_t> ints;
    for (double v : values) {
      ints.push_back(static_cast<int64_t>(integer_value(type, v)));
      check_integer_range(type, ints.back());
    }
    return emit_constant(block, type, dense_text(type, {}, ints));
  }
  std::vector<double> rounded;
  for (double v : values) rounded.push_back(round_to_element(type.element(), v));
  return emit_constant(block, type, dense_text(type, rounded, {}));
}

Value constant(Block& block, const TensorType& type, const std::vector<int64_t>& values) {
  if (static_cast<int64_t>(values.size()) != type.num_elements()) {
    build_fail(kConstant, "{} values for {} ({} elements)", values.size(), type.str(),
               type.num_elements());
  }
  if (is_float(type.element())) {
    std::vector<double> doubles(values.begin(), values.end());
    return constant(block, type, doubles);
  }
  for (int64_t v : values) check_integer_range(type, v);
  return emit_constant(block, type, dense_text(type, {}, values));
}

Value scalar(Block& block, ElementType element, double value) {
  return constant(block, TensorType(element, {}), value);
}

Value iota(Block& block, const TensorType& type, int64_t dimension) {
  constexpr std::string_view kIota = "stablehlo.iota";
  if (type.rank() == 0) build_fail(kIota, "result {} must have rank >= 1", type.str());
  if (dimension < 0 || dimension >= type.rank()) {
    build_fail(kIota, "iota_dimension {} out of range for {}", dimension, type.str());
  }
  if (is_bool(type.element())) build_fail(kIota, "result {} must be integer or float", type.str());
  return detail::emit(block, std::string(kIota), {},
                      {{"iota_dimension", fmt::format("{} : i64", dimension)}}, type);
}

}  // namespace xlacel::stablehlo
