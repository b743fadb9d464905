#pragma once
// stablehlo.dot_general: batched tensor contraction.
//
// f32 accumulation for bf16/f16 inputs: set DotOptions::result_element = ElementType::kF32.
// The op then takes the bf16/f16 operands as they are and declares an f32 result, which is how
// JAX expresses preferred_element_type=float32 and what StableHLO allows (the result element type
// may differ from the operands'); IREE and XLA lower it to a mixed-precision matmul that
// multiplies and accumulates in f32, without materializing f32 copies of the operands. We chose
// this over converting the inputs to f32 first, which would double the bytes a weight matrix
// costs to read unless the compiler happens to fuse the convert.
#include <optional>
#include <utility>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

struct DotDimensions {
  std::vector<int64_t> lhs_batching = {};
  std::vector<int64_t> rhs_batching = {};
  std::vector<int64_t> lhs_contracting = {};
  std::vector<int64_t> rhs_contracting = {};
};

enum class Precision { kDefault, kHigh, kHighest };

struct DotOptions {
  // Element type of the result and of the accumulation; the operands' when unset. Allowed:
  // f32 for float operands, i32/i64 for integer operands.
  std::optional<ElementType> result_element = {};
  // precision_config for (lhs, rhs); omitted from the text when unset.
  std::optional<std::pair<Precision, Precision>> precision = {};
};

// Operands of one element type. Result shape: batch dims, then lhs free dims, then rhs free dims
// (each in operand order).
Value dot_general(Value lhs, Value rhs, const DotDimensions& dimensions,
                  const DotOptions& options = {});

}  // namespace xlacel::stablehlo
