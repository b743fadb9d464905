#pragma once
// Ops that move data without arithmetic: reshape, broadcast_in_dim, transpose, slice,
// dynamic_slice, dynamic_update_slice, concatenate, gather (and take, a gather helper), and
// optimization_barrier.
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// Same elements, row-major, in `shape` (same element count).
Value reshape(Value operand, std::vector<int64_t> shape);
// Operand dimension i becomes result dimension broadcast_dimensions[i] (size 1 or equal).
Value broadcast_in_dim(Value operand, std::vector<int64_t> shape,
                       std::vector<int64_t> broadcast_dimensions);
// Result dimension i is operand dimension permutation[i].
Value transpose(Value operand, std::vector<int64_t> permutation);
// Static slice [start, limit) with strides (all 1 when empty).
Value slice(Value operand, std::vector<int64_t> start, std::vector<int64_t> limit,
            std::vector<int64_t> strides = {});
// A slice of `slice_sizes` at runtime offsets (one 0-d integer per dimension, all of one type),
// clamped so the slice stays inside the operand.
Value dynamic_slice(Value operand, const std::vector<Value>& start_indices,
                    std::vector<int64_t> slice_sizes);
// `operand` with `update` written at the (clamped) runtime offsets.
Value dynamic_update_slice(Value operand, Value update, const std::vector<Value>& start_indices);
// Joins along `dimension`; all other dimensions and the element type must match.
Value concatenate(const std::vector<Value>& inputs, int64_t dimension);

// stablehlo.gather dimension numbers, as in the spec.
struct GatherDimensions {
  std::vector<int64_t> offset_dims = {};
  std::vector<int64_t> collapsed_slice_dims = {};
  std::vector<int64_t> operand_batching_dims = {};
  std::vector<int64_t> start_indices_batching_dims = {};
  std::vector<int64_t> start_index_map = {};
  int64_t index_vector_dim = 0;
};
Value gather(Value operand, Value start_indices, const GatherDimensions& dimensions,
             std::vector<int64_t> slice_sizes, bool indices_are_sorted = false);
// numpy.take(table, indices, axis=0) for in-range indices (out-of-range ones clamp): rows of
// `table` (an embedding lookup). Result shape: indices.shape + table.shape[1:].
Value take(Value table, Value indices);

// The operand unchanged, as a value compilers must compute before (and not fuse into) its users:
// IREE makes it the result of its own dispatch (see models::take_rows for why that matters).
Value optimization_barrier(Value operand);

}  // namespace xlacel::stablehlo
