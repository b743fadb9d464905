#pragma once
// stablehlo.scatter (one input, one updates tensor): `input` with windows of `updates` combined
// into it at the positions `scatter_indices` give, by an update computation built by a callback;
// scatter_replace is the form that overwrites (a KV-cache write at per-row positions).
#include <functional>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// stablehlo.scatter dimension numbers, as in the spec.
struct ScatterDimensions {
  std::vector<int64_t> update_window_dims = {};
  std::vector<int64_t> inserted_window_dims = {};
  std::vector<int64_t> input_batching_dims = {};
  std::vector<int64_t> scatter_indices_batching_dims = {};
  std::vector<int64_t> scatter_dims_to_operand_dims = {};
  int64_t index_vector_dim = 0;
};

struct ScatterOptions {
  // Promises to the compiler (the spec leaves the result implementation-defined when false).
  bool indices_are_sorted = false;
  bool unique_indices = false;
};

// Builds the update computation: `body` is a fresh block whose arguments are the current input
// element and the update element (0-d tensors of the input's element type); return the new
// element (same type), computed with ops on those arguments only.
using ScatterBody = std::function<Value(Block& body, Value current, Value update)>;

// Type-checks every constraint of the spec (C1-C25 for one input) and returns the result, of
// the input's type. Updates whose window falls outside the input are skipped (the spec's
// semantics), not clamped.
Value scatter(Value input, Value scatter_indices, Value updates,
              const ScatterDimensions& dimensions, const ScatterBody& body,
              ScatterOptions options = {});

// scatter whose update computation returns the update: each window of `updates` overwrites the
// input there. With duplicate indices the surviving update is unspecified.
Value scatter_replace(Value input, Value scatter_indices, Value updates,
                      const ScatterDimensions& dimensions, ScatterOptions options = {});

}  // namespace xlacel::stablehlo
