#include "models/weight_layout.h"

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

ElementType cache_element(WeightType weights) {
  return element_of(weights);
}

}  // namespace xlacel::models
