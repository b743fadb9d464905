#pragma once
// What a graph takes and returns, by name: the executor (src/executor) builds every call from
// this and nothing else, so no runtime knows a model's argument order.
//
// `main`'s arguments are inputs, then weights, then caches, in these lists' orders; its results
// are outputs, then the caches' new values (cache i is aliased to result outputs.size() + i).
#include <cstdint>
#include <string>
#include <vector>

#include "models/weight_layout.h"
#include "stablehlo/types.h"

namespace xlacel::models {

struct TensorSpec {
  std::string name;  // "tokens", "positions", "k_cache_3", "logits", ...
  stablehlo::ElementType element = stablehlo::ElementType::kF32;
  std::vector<int64_t> shape;  // outermost first; {} for a scalar
};

// Elements of a spec's shape, and its bytes.
int64_t element_count(const TensorSpec& spec);
int64_t byte_size(const TensorSpec& spec);

struct GraphSignature {
  std::vector<TensorSpec> inputs;   // per-call values the host supplies
  std::vector<WeightSpec> weights;  // resident, uploaded once
  std::vector<TensorSpec> caches;   // resident and donated: each call returns their new values
  std::vector<TensorSpec> outputs;  // what the host may read back
};

}  // namespace xlacel::models
