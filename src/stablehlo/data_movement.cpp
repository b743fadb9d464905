#include "stablehlo/data_movement.h"

#include <algorithm>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {

using detail::int_list;
using detail::types_of;

namespace {

void require(std::string_view op, std::span<const Value> operands) {
  for (const Value& v : operands) {
    if (!v.valid()) build_fail(op, "empty operand");
  }
}

void check_start_indices(std::string_view op, Value operand,
                         const std::vector<Value>& start_indices,
                         const std::vector<Value>& all_operands) {
  if (static_cast<int64_t>(start_indices.size()) != operand.rank()) {
    build_fail(op, "{} start indices for rank {}: ({})", start_indices.size(), operand.rank(),
               types_of(all_operands));
  }
  for (const Value& index : start_indices) {
    if (index.rank() != 0 || !is_integer(index.element()) ||
        index.type() != start_indices.front().type()) {
      build_fail(op, "start indices must be 0-d integers of one type: ({})",
                 types_of(all_operands));
    }
  }
}

}  // namespace

Value reshape(Value operand, std::vector<int64_t> shape) {
  constexpr std::string_view kOp = "stablehlo.reshape";
  require(kOp, {&operand, 1});
  TensorType result(operand.element(), std::move(shape));
  if (result.num_elements() != operand.type().num_elements()) {
    build_fail(kOp, "cannot reshape {} ({} elements) to {} ({} elements)", operand.type().str(),
               operand.type().num_elements(), result.str(), result.num_elements());
  }
  return detail::emit(std::string(kOp), {operand}, {}, result);
}

Value broadcast_in_dim(Value operand, std::vector<int64_t> shape,
                       std::vector<int64_t> broadcast_dimensions) {
  constexpr std::string_view kOp = "stablehlo.broadcast_in_dim";
  require(kOp, {&operand, 1});
  TensorType result(operand.element(), std::move(shape));
  if (static_cast<int64_t>(broadcast_dimensions.size()) != operand.rank()) {
    build_fail(kOp, "broadcast_dimensions {} must have one entry per operand dimension of {}",
               int_list(broadcast_dimensions), operand.type().str());
  }
  detail::check_axes(kOp, "broadcast_dimensions", broadcast_dimensions, result.rank(),
                     {&operand, 1});
  for (size_t i = 0; i < broadcast_dimensions.size(); ++i) {
    int64_t from = operand.shape()[i];
    int64_t to = result.dim(broadcast_dimensions[i]);
    if (from != 1 && from != to) {
      build_fail(kOp, "operand dimension {} of {} (size {}) cannot broadcast to {} of {}", i,
                 operand.type().str(), from, broadcast_dimensions[i], result.str());
    }
  }
  return detail::emit(std::string(kOp), {operand},
                      {{"broadcast_dimensions", detail::i64_array(broadcast_dimensions)}}, result);
}

Value transpose(Value operand, std::vector<int64_t> permutation) {
  constexpr std::string_view kOp = "stablehlo.transpose";
  require(kOp, {&operand, 1});
  if (static_cast<int64_t>(permutation.size()) != operand.rank()) {
    build_fail(kOp, "permutation {} is not a permutation of the dimensions of {}",
               int_list(permutation), operand.type().str());
  }
  detail::check_axes(kOp, "permutation", permutation, operand.rank(), {&operand, 1});
  std::vector<int64_t> shape;
  for (int64_t axis : permutation) shape.push_back(operand.shape()[static_cast<size_t>(axis)]);
  return detail::emit(std::string(kOp), {operand},
                      {{"permutation", detail::i64_array(permutation)}},
                      operand.type().with_shape(shape));
}

Value slice(Value operand, std::vector<int64_t> start, std::vector<int64_t> limit,
            std::vector<int64_t> strides) {
  constexpr std::string_view kOp = "stablehlo.slice";
  require(kOp, {&operand, 1});
  if (strides.empty()) strides.assign(static_cast<size_t>(operand.rank()), 1);
  size_t rank = static_cast<size_t>(operand.rank());
  if (start.size() != rank || limit.size() != rank || strides.size() != rank) {
    build_fail(kOp, "start {}, limit {} and strides {} need {} entries each for {}",
               int_list(start), int_list(limit), int_list(strides), rank, operand.type().str());
  }
  std::vector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > operand.shape()[i] || strides[i] <= 0) {
      build_fail(kOp, "bad slice of dimension {}: start {}, limit {}, stride {} for {}", i,
                 start[i], limit[i], strides[i], operand.type().str());
    }
    shape.push_back((limit[i] - start[i] + strides[i] - 1) / strides[i]);
  }
  return detail::emit(std::string(kOp), {operand},
                      {{"start_indices", detail::i64_array(start)},
                       {"limit_indices", detail::i64_array(limit)},
                       {"strides", detail::i64_array(strides)}},
                      operand.type().with_shape(shape));
}

Value dynamic_slice(Value operand, const std::vector<Value>& start_indices,
                    std::vector<int64_t> slice_sizes) {
  constexpr std::string_view kOp = "stablehlo.dynamic_slice";
  std::vector<Value> operands{operand};
  operands.insert(operands.end(), start_indices.begin(), start_indices.end());
  require(kOp, operands);
  check_start_indices(kOp, operand, start_indices, operands);
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    build_fail(kOp, "slice_sizes {} needs one entry per dimension of {}", int_list(slice_sizes),
               operand.type().str());
  }
  for (size_t i = 0; i < slice_sizes.size(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.shape()[i]) {
      build_fail(kOp, "slice_sizes {} does not fit in {}", int_list(slice_sizes),
                 operand.type().str());
    }
  }
  TensorType result = operand.type().with_shape(slice_sizes);
  return detail::emit(std::string(kOp), std::move(operands),
                      {{"slice_sizes", detail::i64_array(slice_sizes)}}, result);
}

Value dynamic_update_slice(Value operand, Value update, const std::vector<Value>& start_indices) {
  constexpr std::string_view kOp = "stablehlo.dynamic_update_slice";
  std::vector<Value> operands{operand, update};
  operands.insert(operands.end(), start_indices.begin(), start_indices.end());
  require(kOp, operands);
  if (update.element() != operand.element() || update.rank() != operand.rank()) {
    build_fail(kOp, "update must have the operand's element type and rank: ({})",
               types_of(operands));
  }
  for (size_t i = 0; i < update.shape().size(); ++i) {
    if (update.shape()[i] > operand.shape()[i]) {
      build_fail(kOp, "update does not fit in the operand: ({})", types_of(operands));
    }
  }
  check_start_indices(kOp, operand, start_indices, operands);
  return detail::emit(std::string(kOp), std::move(operands), {}, operand.type());
}

Value concatenate(const std::vector<Value>& inputs, int64_t dimension) {
  constexpr std::string_view kOp = "stablehlo.concatenate";
  if (inputs.empty()) build_fail(kOp, "no inputs");
  require(kOp, inputs);
  const TensorType& first = inputs.front().type();
  if (dimension < 0 || dimension >= first.rank()) {
    build_fail(kOp, "dimension {} out of range for ({})", dimension, types_of(inputs));
  }
  std::vector<int64_t> shape = first.shape();
  shape[static_cast<size_t>(dimension)] = 0;
  for (const Value& input : inputs) {
    bool same = input.element() == first.element() && input.rank() == first.rank();
    for (int64_t i = 0; same && i < first.rank(); ++i) {
      same = i == dimension || input.type().dim(i) == first.dim(i);
    }
    if (!same) {
      build_fail(kOp, "inputs must match in element type and all dimensions but {}: ({})",
                 dimension, types_of(inputs));
    }
    shape[static_cast<size_t>(dimension)] += input.type().dim(dimension);
  }
  return detail::emit(std::string(kOp), inputs, {{"dimension", fmt::format("{} : i64", dimension)}},
                      first.with_shape(shape));
}

Value gather(Value operand, Value start_indices, const GatherDimensions& d,
             std::vector<int64_t> slice_sizes, bool indices_are_sorted) {
  constexpr std::string_view kOp = "stablehlo.gather";
  std::vector<Value> operands{operand, start_indices};
  require(kOp, operands);
  auto fail = [&](std::string_view problem) {
    build_fail(kOp,
               "{}: offset_dims {}, collapsed_slice_dims {}, operand_batching_dims {}, "
               "start_indices_batching_dims {}, start_index_map {}, index_vector_dim {}, "
               "slice_sizes {} for ({})",
               problem, int_list(d.offset_dims), int_list(d.collapsed_slice_dims),
               int_list(d.operand_batching_dims), int_list(d.start_indices_batching_dims),
               int_list(d.start_index_map), d.index_vector_dim, int_list(slice_sizes),
               types_of(operands));
  };
  const int64_t operand_rank = operand.rank();
  const int64_t indices_rank = start_indices.rank();
  if (!is_integer(start_indices.element())) fail("start_indices must be integer");
  if (static_cast<int64_t>(d.offset_dims.size() + d.collapsed_slice_dims.size() +
                           d.operand_batching_dims.size()) != operand_rank) {
    fail("offset_dims + collapsed_slice_dims + operand_batching_dims must cover the operand rank");
  }
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices_rank) fail("bad index_vector_dim");
  int64_t index_vector_size =
      d.index_vector_dim < indices_rank ? start_indices.type().dim(d.index_vector_dim) : 1;
  if (static_cast<int64_t>(d.start_index_map.size()) != index_vector_size) {
    fail("start_index_map size must equal the index vector size");
  }
  if (!detail::is_sorted_unique(d.offset_dims)) fail("offset_dims must be sorted and unique");
  if (!detail::is_sorted_unique(d.collapsed_slice_dims)) {
    fail("collapsed_slice_dims must be sorted and unique");
  }
  if (!detail::is_sorted_unique(d.operand_batching_dims)) {
    fail("operand_batching_dims must be sorted and unique");
  }
  std::vector<int64_t> collapsed_and_batching = d.collapsed_slice_dims;
  collapsed_and_batching.insert(collapsed_and_batching.end(), d.operand_batching_dims.begin(),
                                d.operand_batching_dims.end());
  std::vector<int64_t> map_and_batching = d.start_index_map;
  map_and_batching.insert(map_and_batching.end(), d.operand_batching_dims.begin(),
                          d.operand_batching_dims.end());
  for (const auto* axes : {&collapsed_and_batching, &map_and_batching}) {
    std::vector<int64_t> sorted = *axes;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      fail("a dimension repeats among collapsed/batching/start_index_map dims");
    }
    for (int64_t axis : sorted) {
      if (axis < 0 || axis >= operand_rank) fail("operand dimension out of range");
    }
  }
  if (static_cast<int64_t>(slice_sizes.size()) != operand_rank) {
    fail("slice_sizes needs one entry per operand dimension");
  }
  for (int64_t i = 0; i < operand_rank; ++i) {
    int64_t size = slice_sizes[static_cast<size_t>(i)];
    if (size < 0 || size > operand.type().dim(i)) fail("slice_sizes does not fit in the operand");
    if (detail::contains(collapsed_and_batching, i) && size > 1) {
      fail("collapsed and batching dimensions must have slice size 0 or 1");
    }
  }
  if (d.operand_batching_dims.size() != d.start_indices_batching_dims.size()) {
    fail("operand_batching_dims and start_indices_batching_dims differ in size");
  }
  std::vector<int64_t> sorted_index_batching = d.start_indices_batching_dims;
  std::sort(sorted_index_batching.begin(), sorted_index_batching.end());
  if (std::adjacent_find(sorted_index_batching.begin(), sorted_index_batching.end()) !=
      sorted_index_batching.end()) {
    fail("start_indices_batching_dims repeats a dimension");
  }
  for (size_t i = 0; i < d.start_indices_batching_dims.size(); ++i) {
    int64_t axis = d.start_indices_batching_dims[i];
    if (axis < 0 || axis >= indices_rank || axis == d.index_vector_dim) {
      fail("bad start_indices_batching_dims");
    }
    if (start_indices.type().dim(axis) != operand.type().dim(d.operand_batching_dims[i])) {
      fail("batching dimension sizes differ");
    }
  }
  // Result: batch dims (start_indices without index_vector_dim) around the offset dims
  // (slice_sizes without collapsed and batching dims) at positions offset_dims.
  std::vector<int64_t> batch_sizes;
  for (int64_t i = 0; i < indices_rank; ++i) {
    if (i != d.index_vector_dim) batch_sizes.push_back(start_indices.type().dim(i));
  }
  std::vector<int64_t> offset_sizes;
  for (int64_t i = 0; i < operand_rank; ++i) {
    if (!detail::contains(collapsed_and_batching, i)) {
      offset_sizes.push_back(slice_sizes[static_cast<size_t>(i)]);
    }
  }
  int64_t result_rank = static_cast<int64_t>(batch_sizes.size() + offset_sizes.size());
  for (int64_t axis : d.offset_dims) {
    if (axis < 0 || axis >= result_rank) fail("offset_dims out of range of the result rank");
  }
  std::vector<int64_t> shape;
  size_t next_batch = 0;
  size_t next_offset = 0;
  for (int64_t i = 0; i < result_rank; ++i) {
    shape.push_back(detail::contains(d.offset_dims, i) ? offset_sizes[next_offset++]
                                                       : batch_sizes[next_batch++]);
  }
  std::string numbers;
  auto field = [&](std::string_view name, const std::vector<int64_t>& values) {
    if (values.empty()) return;
    numbers += fmt::format("{}{} = {}", numbers.empty() ? "" : ", ", name, int_list(values));
  };
  field("offset_dims", d.offset_dims);
  field("collapsed_slice_dims", d.collapsed_slice_dims);
  field("operand_batching_dims", d.operand_batching_dims);
  field("start_indices_batching_dims", d.start_indices_batching_dims);
  field("start_index_map", d.start_index_map);
  numbers +=
      fmt::format("{}index_vector_dim = {}", numbers.empty() ? "" : ", ", d.index_vector_dim);
  return detail::emit(std::string(kOp), std::move(operands),
                      {{"dimension_numbers", fmt::format("#stablehlo.gather<{}>", numbers)},
                       {"indices_are_sorted", indices_are_sorted ? "true" : "false"},
                       {"slice_sizes", detail::i64_array(slice_sizes)}},
                      operand.type().with_shape(shape));
}

Value take(Value table, Value indices) {
  if (!table.valid() || !indices.valid()) build_fail("stablehlo.gather", "empty operand");
  if (table.rank() < 1) {
    build_fail("stablehlo.gather", "take needs a table of rank >= 1, got {}", table.type().str());
  }
  GatherDimensions d;
  for (int64_t i = 1; i < table.rank(); ++i) d.offset_dims.push_back(indices.rank() + i - 1);
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = indices.rank();
  std::vector<int64_t> slice_sizes = table.shape();
  slice_sizes[0] = 1;
  return gather(table, indices, d, slice_sizes);
}

Value optimization_barrier(Value operand) {
  constexpr std::string_view kOp = "stablehlo.optimization_barrier";
  require(kOp, {&operand, 1});
  return detail::emit(std::string(kOp), {operand}, {}, operand.type());
}

}  // namespace xlacel::stablehlo
