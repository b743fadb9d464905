#include "stablehlo/scatter.h"

#include <algorithm>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {

using detail::contains;
using detail::int_list;
using detail::is_sorted_unique;
using detail::types_of;

namespace {

constexpr std::string_view kScatter = "stablehlo.scatter";

bool is_unique(std::vector<int64_t> axes) {
  std::sort(axes.begin(), axes.end());
  return std::adjacent_find(axes.begin(), axes.end()) == axes.end();
}

bool in_range(const std::vector<int64_t>& axes, int64_t rank) {
  return std::all_of(axes.begin(), axes.end(), [&](int64_t a) { return a >= 0 && a < rank; });
}

std::vector<int64_t> joined(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// #stablehlo.scatter<...>: empty lists are left out, as MLIR prints them.
std::string dimension_numbers(const ScatterDimensions& d) {
  std::string text;
  auto field = [&](std::string_view name, const std::vector<int64_t>& values) {
    if (values.empty()) return;
    text += fmt::format("{}{} = {}", text.empty() ? "" : ", ", name, int_list(values));
  };
  field("update_window_dims", d.update_window_dims);
  field("inserted_window_dims", d.inserted_window_dims);
  field("input_batching_dims", d.input_batching_dims);
  field("scatter_indices_batching_dims", d.scatter_indices_batching_dims);
  field("scatter_dims_to_operand_dims", d.scatter_dims_to_operand_dims);
  text += fmt::format("{}index_vector_dim = {}", text.empty() ? "" : ", ", d.index_vector_dim);
  return fmt::format("#stablehlo.scatter<{}>", text);
}

void check_dimensions(Value input, Value indices, Value updates, const ScatterDimensions& d) {
  const std::vector<Value> operands{input, indices, updates};
  auto fail = [&](std::string_view problem) {
    build_fail(kScatter,
               "{}: update_window_dims {}, inserted_window_dims {}, input_batching_dims {}, "
               "scatter_indices_batching_dims {}, scatter_dims_to_operand_dims {}, "
               "index_vector_dim {} for ({})",
               problem, int_list(d.update_window_dims), int_list(d.inserted_window_dims),
               int_list(d.input_batching_dims), int_list(d.scatter_indices_batching_dims),
               int_list(d.scatter_dims_to_operand_dims), d.index_vector_dim, types_of(operands));
  };
  const int64_t input_rank = input.rank();
  const int64_t indices_rank = indices.rank();
  const int64_t updates_rank = updates.rank();
  if (!is_integer(indices.element())) fail("scatter_indices must be integer");
  if (updates.element() != input.element()) fail("updates must have the input's element type");
  // C1
  if (static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size() +
                           d.input_batching_dims.size()) != input_rank) {
    fail(
        "update_window_dims + inserted_window_dims + input_batching_dims must cover the "
        "input rank");
  }
  // C7, C8
  if (!is_sorted_unique(d.update_window_dims)) fail("update_window_dims must be sorted and unique");
  if (!in_range(d.update_window_dims, updates_rank)) fail("update_window_dims out of range");
  // C9 - C13
  if (!is_unique(joined(d.inserted_window_dims, d.input_batching_dims))) {
    fail("a dimension repeats among inserted_window_dims and input_batching_dims");
  }
  if (!is_sorted_unique(d.inserted_window_dims)) {
    fail("inserted_window_dims must be sorted and unique");
  }
  if (!in_range(d.inserted_window_dims, input_rank)) fail("inserted_window_dims out of range");
  if (!is_sorted_unique(d.input_batching_dims)) {
    fail("input_batching_dims must be sorted and unique");
  }
  if (!in_range(d.input_batching_dims, input_rank)) fail("input_batching_dims out of range");
  // C14 - C18
  if (!is_unique(d.scatter_indices_batching_dims)) {
    fail("scatter_indices_batching_dims repeats a dimension");
  }
  if (!in_range(d.scatter_indices_batching_dims, indices_rank)) {
    fail("scatter_indices_batching_dims out of range");
  }
  if (contains(d.scatter_indices_batching_dims, d.index_vector_dim)) {
    fail("index_vector_dim must not be a batching dimension");
  }
  if (d.input_batching_dims.size() != d.scatter_indices_batching_dims.size()) {
    fail("input_batching_dims and scatter_indices_batching_dims differ in size");
  }
  for (size_t i = 0; i < d.input_batching_dims.size(); ++i) {
    if (input.type().dim(d.input_batching_dims[i]) !=
        indices.type().dim(d.scatter_indices_batching_dims[i])) {
      fail("batching dimension sizes differ");
    }
  }
  // C22, C19 - C21
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices_rank) fail("bad index_vector_dim");
  const int64_t index_vector_size =
      d.index_vector_dim < indices_rank ? indices.type().dim(d.index_vector_dim) : 1;
  if (static_cast<int64_t>(d.scatter_dims_to_operand_dims.size()) != index_vector_size) {
    fail("scatter_dims_to_operand_dims size must equal the index vector size");
  }
  if (!is_unique(joined(d.scatter_dims_to_operand_dims, d.input_batching_dims))) {
    fail("a dimension repeats among scatter_dims_to_operand_dims and input_batching_dims");
  }
  if (!in_range(d.scatter_dims_to_operand_dims, input_rank)) {
    fail("scatter_dims_to_operand_dims out of range");
  }
  // C4: updates = the indices' scatter dims (all but index_vector_dim, in order) at the axes
  // not in update_window_dims, and window sizes (at most the input's dims that are neither
  // inserted nor batching) at update_window_dims.
  std::vector<int64_t> scatter_sizes;
  for (int64_t i = 0; i < indices_rank; ++i) {
    if (i != d.index_vector_dim) scatter_sizes.push_back(indices.type().dim(i));
  }
  std::vector<int64_t> window_bounds;
  for (int64_t i = 0; i < input_rank; ++i) {
    if (!contains(d.inserted_window_dims, i) && !contains(d.input_batching_dims, i)) {
      window_bounds.push_back(input.type().dim(i));
    }
  }
  if (static_cast<int64_t>(scatter_sizes.size() + window_bounds.size()) != updates_rank) {
    fail("updates rank must be the scatter dims of scatter_indices plus the window dims");
  }
  size_t next_scatter = 0;
  size_t next_window = 0;
  for (int64_t i = 0; i < updates_rank; ++i) {
    const int64_t size = updates.type().dim(i);
    if (contains(d.update_window_dims, i)) {
      if (size > window_bounds[next_window++]) fail("an update window exceeds the input");
    } else if (size != scatter_sizes[next_scatter++]) {
      fail("updates' scatter dimensions must match scatter_indices");
    }
  }
}

}  // namespace

Value scatter(Value input, Value scatter_indices, Value updates, const ScatterDimensions& d,
              const ScatterBody& body, ScatterOptions options) {
  const std::vector<Value> operands{input, scatter_indices, updates};
  for (const Value& v : operands) {
    if (!v.valid()) build_fail(kScatter, "empty operand");
  }
  check_dimensions(input, scatter_indices, updates, d);

  // C23, C25: the update computation maps (current, update) elements to one of the same type.
  const TensorType element(input.element(), {});
  auto region = std::make_unique<Block>(input.block().function(), "stablehlo.return");
  Value current = region->add_argument(element);
  Value update = region->add_argument(element);
  Value returned = body(*region, current, update);
  if (!returned.valid() || &returned.block() != region.get()) {
    build_fail(kScatter, "the update computation returned a value defined outside it");
  }
  if (returned.type() != element) {
    build_fail(kScatter, "the update computation returns {} but must return {} for ({})",
               returned.type().str(), element.str(), types_of(operands));
  }
  region->set_terminator({returned});

  Operation op;
  op.name = kScatter;
  op.operands = operands;
  op.attributes["scatter_dimension_numbers"] = dimension_numbers(d);
  op.attributes["indices_are_sorted"] = options.indices_are_sorted ? "true" : "false";
  op.attributes["unique_indices"] = options.unique_indices ? "true" : "false";
  op.regions.push_back(std::move(region));
  return input.block().append(std::move(op), {input.type()}).front();  // C24
}

Value scatter_replace(Value input, Value scatter_indices, Value updates,
                      const ScatterDimensions& dimensions, ScatterOptions options) {
  return scatter(
      input, scatter_indices, updates, dimensions,
      [](Block&, Value, Value update) { return update; }, options);
}

}  // namespace xlacel::stablehlo
