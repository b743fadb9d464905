#include "stablehlo/types.h"

namespace xlacel::stablehlo {

std::string_view to_string(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return "f32";
    case ElementType::kF16:
      return "f16";
    case ElementType::kBF16:
      return "bf16";
    case ElementType::kI1:
      return "i1";
    case ElementType::kI8:
      return "i8";
    case ElementType::kI32:
      return "i32";
    case ElementType::kI64:
      return "i64";
    case ElementType::kUI8:
      return "ui8";
    case ElementType::kUI32:
      return "ui32";
  }
  return "?";
}

int bit_width(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return 32;
    case ElementType::kF16:
      return 16;
    case ElementType::kBF16:
      return 16;
    case ElementType::kI1:
      return 1;
    case ElementType::kI8:
      return 8;
    case ElementType::kI32:
      return 32;
    case ElementType::kI64:
      return 64;
    case ElementType::kUI8:
      return 8;
    case ElementType::kUI32:
      return 32;
  }
  return 0;
}

bool is_float(ElementType type) {
  return type == ElementType::kF32 || type == ElementType::kF16 || type == ElementType::kBF16;
}
bool is_bool(ElementType type) {
  return type == ElementType::kI1;
}
bool is_signed_integer(ElementType type) {
  return type == ElementType::kI8 || type == ElementType::kI32 || type == ElementType::kI64;
}
bool is_unsigned_integer(ElementType type) {
  return type == ElementType::kUI8 || type == ElementType::kUI32;
}
bool is_integer(ElementType type) {
  return is_signed_integer(type) || is_unsigned_integer(type);
}

TensorType::TensorType(ElementType element, std::vector<int64_t> shape)
    : element_(element), shape_(std::move(shape)) {
  for (int64_t d : shape_) {
    if (d < 0)
      build_fail("tensor type", "negative dimension in shape [{}]", fmt::join(shape_, ", "));
  }
}

int64_t TensorType::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string text = "tensor<";
  for (int64_t d : shape_) text += fmt::format("{}x", d);
  text += to_string(element_);
  text += '>';
  return text;
}

std::string join_types(const std::vector<TensorType>& types) {
  std::string text;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) text += ", ";
    text += types[i].str();
  }
  return text;
}

}  // namespace xlacel::stablehlo
