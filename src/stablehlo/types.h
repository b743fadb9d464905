#pragma once
// Tensor types of the StableHLO builder: ranked tensors with static dimensions and the element
// types the engine needs, printed exactly as MLIR prints them (tensor<2x3xf32>, tensor<i1>).
//
// Builder misuse (operand types an op does not accept, out-of-range dimension numbers, a reduce
// body of the wrong signature) is a bug in the model code, not something a user's input can cause,
// so it throws BuildError (a std::logic_error), never xlacel::Error. Its message starts with the op
// ("stablehlo.add: ...") and names the operand types involved.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::stablehlo {

class BuildError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws BuildError("<op>: <formatted problem>").
template <typename... Args>
[[noreturn]] void build_fail(std::string_view op, fmt::format_string<Args...> format,
                             Args&&... args) {
  throw BuildError(fmt::format("{}: {}", op, fmt::format(format, std::forward<Args>(args)...)));
}

enum class ElementType : uint8_t { kF32, kF16, kBF16, kI1, kI8, kI32, kI64, kUI8, kUI32 };

std::string_view to_string(ElementType type);  // "f32", "bf16", "i1", "ui32", ...
int bit_width(ElementType type);
bool is_float(ElementType type);
bool is_bool(ElementType type);              // i1
bool is_integer(ElementType type);           // signed or unsigned, not i1
bool is_signed_integer(ElementType type);    // i8, i32, i64
bool is_unsigned_integer(ElementType type);  // ui8, ui32

class TensorType {
 public:
  // Throws BuildError on a negative dimension.
  TensorType(ElementType element, std::vector<int64_t> shape);

  ElementType element() const { return element_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  int64_t num_elements() const;
  TensorType with_shape(std::vector<int64_t> shape) const { return {element_, std::move(shape)}; }
  TensorType with_element(ElementType element) const { return {element, shape_}; }

  std::string str() const;  // tensor<2x3xf32>; a scalar is tensor<f32>

  friend bool operator==(const TensorType&, const TensorType&) = default;

 private:
  ElementType element_;
  std::vector<int64_t> shape_;
};

// Joins types as "tensor<2xf32>, tensor<i32>" for messages and printed signatures.
std::string join_types(const std::vector<TensorType>& types);

}  // namespace xlacel::stablehlo
