#pragma once
// A runtime's hand-written product for a weight kept as planes (models/resident_weight.h: codes,
// f32 scales and optional f32 offsets per group of columns), which the graph emits in place of
// its pure-StableHLO product where the runtime provides one (IREE llvm-cpu: a custom dispatch
// linking an object file). The StableHLO product stays the reference it is tested against, and
// the arithmetic is the same: each weight dequantized to f32 as the gguf package does, then
// multiplied in f32.
#include <cstdint>
#include <optional>

#include "stablehlo/function.h"

namespace xlacel::lowering {

// A weight [N, K] kept as planes, as values of the graph being emitted.
struct PlanarOperands {
  // i8 [N, K] (code_bits 8), or i8 [N, K / 2] nibbles (code_bits 4 to 6: the low 4 bits of two
  // codes per byte, high_bits above; plus code_bias; layout in model_files/planar_blocks.h).
  stablehlo::Value codes;
  int code_bits = 8;
  int code_bias = 0;
  stablehlo::Value scales;                  // f32 or f16 [N, K / group], or i8 (two-level)
  std::optional<stablehlo::Value> offsets;  // as scales, formats with a minimum
  // Two-level scales and offsets (models/resident_weight.h): their f16 factors [N, K / 256].
  std::optional<stablehlo::Value> super_scales;
  std::optional<stablehlo::Value> super_offsets;
  // code_bits 5 and 6: the bits above each nibble, i8 [N, K * (code_bits - 4) / 8].
  std::optional<stablehlo::Value> high_bits;
  // 4-bit codes in row pairs (model_files/planar_blocks.h, pair_code_rows), as a kernel that
  // takes_paired_rows() asks for them.
  bool paired_rows = false;
  // MXFP4 (model_files/planar_blocks.h): 4-bit E2M1 codes, each standing for kE2M1Doubled's
  // value, and scales i8 [N, K / 32] holding E8M0 exponents (the scale 2^(e - 128)).
  bool e2m1 = false;
  // Where set (i32 []), the planes are a mixture's stacked experts ([E, N, ...] each) and the
  // product is expert `expert`'s, read in place (a kernel that reads_experts()).
  std::optional<stablehlo::Value> expert;
};

class PlanarKernel {
 public:
  virtual ~PlanarKernel() = default;

  // Whether it takes (and is the faster way to multiply) `rows` activation rows times planes of
  // `group` columns per scale with codes of `code_bits`.
  virtual bool handles(int64_t rows, int64_t group, int code_bits) const = 0;
  // Whether it reads 4-bit codes fastest in row pairs (PlanarOperands::paired_rows): then the
  // executor keeps such weights so (models/resident_weight.h, _paired_nibbles).
  virtual bool takes_paired_rows() const { return false; }
  // Whether multiply takes PlanarOperands::expert: one expert of stacked planes, without a slice
  // of them made first.
  virtual bool reads_experts() const { return false; }
  // x f32 [T, K] times the weight [N, K] transposed -> f32 [T, N]. The values belong to a
  // function of a stablehlo::Module, which receives what the emitted op refers to.
  virtual stablehlo::Value multiply(stablehlo::Value x, const PlanarOperands& weight) const = 0;

  // The same for a weight kept as 16-bit floats (f16 or bf16, WeightType::kAuto keeps them
  // narrow): whether it takes `rows` activation rows times values of `element` [N, `k`], and
  // x f32 [T, K] times values [N, K] transposed -> f32 [T, N], each value widened exactly to f32.
  virtual bool handles_wide(int64_t rows, stablehlo::ElementType element, int64_t k) const = 0;
  // With `expert` (a kernel that reads_experts()), values are stacked experts [E, N, K] and the
  // product is expert `expert`'s (i32 []).
  virtual stablehlo::Value multiply_wide(stablehlo::Value x, stablehlo::Value values,
                                         std::optional<stablehlo::Value> expert) const = 0;
  // Rows `ids` (i32 [T]) of such values [N, K], each value widened exactly to f32 -> f32 [T, K]
  // (an embedding lookup), where handles_wide(T, element, K); an id outside [0, N) takes the
  // nearest row, as StableHLO's gather does.
  virtual stablehlo::Value take_wide_rows(stablehlo::Value values, stablehlo::Value ids) const = 0;
};

}  // namespace xlacel::lowering
