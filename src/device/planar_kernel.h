#pragma once
// A runtime's hand-written product for a weight kept as planes (models/resident_weight.h: i8
// codes, f32 scales and optional f32 offsets per group of columns), which the graph emits in
// place of its pure-StableHLO product where the runtime provides one (IREE llvm-cpu: a custom
// dispatch linking an object file). The StableHLO product stays the reference it is tested
// against, and the arithmetic is the same: each weight dequantized to f32 as the gguf package
// does, then multiplied in f32.
#include <cstdint>
#include <optional>

#include "stablehlo/function.h"

namespace xlacel::device {

class PlanarKernel {
 public:
  virtual ~PlanarKernel() = default;

  // Whether it takes `rows` activation rows times planes of `group` columns per scale.
  virtual bool handles(int64_t rows, int64_t group) const = 0;
  // x f32 [T, K] times the weight [N, K] transposed -> f32 [T, N]: codes i8 [N, K], scales (and
  // offsets) f32 [N, K / group]. The values belong to a function of a stablehlo::Module, which
  // receives what the emitted op refers to.
  virtual stablehlo::Value multiply(stablehlo::Value x, stablehlo::Value codes,
                                    stablehlo::Value scales,
                                    std::optional<stablehlo::Value> offsets) const = 0;
};

}  // namespace xlacel::device
