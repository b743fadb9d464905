#include "models/weight_layout.h"

#include <fmt/format.h>

#include "models/resident_weight.h"

namespace xlacel::models {

using stablehlo::ElementType;

ElementType element_of(WeightType type) {
  switch (type) {
    case WeightType::kF32:
      return ElementType::kF32;
    case WeightType::kBF16:
      return ElementType::kBF16;
    case WeightType::kF16:
      return ElementType::kF16;
    case WeightType::kAuto:
      return ElementType::kF32;  // the logical type; resident_weight_specs picks each stored one
  }
  return ElementType::kF32;
}

WeightSpec hf_expert_spec(const WeightSpec& stacked, int64_t x) {
  WeightSpec one = stacked;
  one.hf_experts = 0;
  one.shape.erase(one.shape.begin());
  one.hf_name = fmt::format(fmt::runtime(stacked.hf_name), x);
  if (stacked.hf_stacked >= 0) one.hf_stacked = x;
  one.hf_rows.row += x * stacked.hf_expert_row_step;
  return one;
}

ElementType cache_element(WeightType weights) {
  return element_of(weights);
}

}  // namespace xlacel::models
