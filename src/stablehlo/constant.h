#pragma once
// Values from nothing: constants (splat and dense) and iota.
//
// Float values are rounded to the element type (round to nearest even; f16/bf16 via f32) and
// printed so that parsing gives back exactly that value: the shortest decimal that round-trips,
// or the bit pattern in hex (0x7F800000) for inf and NaN. Dense constants of more than
// kHexConstantThreshold elements print as one hex blob of little-endian element bytes
// (dense<"0x...">), smaller ones as nested lists. Integer values must fit the element type.
#include <cstdint>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

inline constexpr int64_t kHexConstantThreshold = 256;

// Every element `value` (integral and in range for integer types; 0 or 1 for i1).
Value constant(Block& block, const TensorType& type, double value);
// Row-major elements; as many as type.num_elements().
Value constant(Block& block, const TensorType& type, const std::vector<double>& values);
Value constant(Block& block, const TensorType& type, const std::vector<int64_t>& values);
// A 0-d constant: tensor<element>.
Value scalar(Block& block, ElementType element, double value);

// iota: element i along `dimension` is i (integer or float result).
Value iota(Block& block, const TensorType& type, int64_t dimension);

// `value` rounded to `element` (identity for integer types).
double round_to_element(ElementType element, double value);
// The raw encoding of `value` (already representable) in `element`: f32 bits, bf16 bits, ...
uint64_t element_bits(ElementType element, double value);

}  // namespace xlacel::stablehlo
