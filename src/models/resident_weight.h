#pragma once
// Weights kept on the device in the format their file stores (WeightType::kAuto), and how a
// graph reads them. A matrix stored in a GGML block format becomes up to three arguments, its
// planes (model_files/planar_blocks.h):
//
//   <name>_codes    i8  [rows, cols]          codes
//   <name>_nibbles  i8  [rows, cols / 2]      codes of the 4- to 6-bit formats, the low 4 bits of
//                                             two per byte (in place of _codes; layout and bias:
//                                             planar_blocks.h)
//   <name>_e2m1_nibbles i8 [rows, cols / 2]   MXFP4's E2M1 codes as nibbles (in place of
//                                             _codes; their _scales are the i8 bytes of its E8M0
//                                             exponents: planar_blocks.h)
//   <name>_high_bits i8 [rows, cols * b / 8]  5- and 6-bit formats: the b = 1 or 2 bits above
//                                             each nibble
//   <name>_scales   f32 [rows, cols / group]  per-group scales (f16 where the file stores them
//                                             as f16: planar_scales_are_f16)
//   <name>_offsets  f32 [rows, cols / group]  per-group offsets (formats with a minimum; as the
//                                             scales)
//
//   <name>_paired_nibbles i8 [rows, cols / 2]  4-bit codes (Q4_0, Q4_1, Q4_K) as _nibbles, rows
//                                             2p and 2p + 1 alternating by 64-byte line
//                                             (model_files/planar_blocks.h, pair_code_rows), for
//                                             a runtime whose kernel reads them so
//                                             (paired_nibble_specs)
//
// The K-quants' scales and offsets are two-level (planar_scales_are_two_level): _scales and
// _offsets are then i8 [rows, cols / group], and their f16 factors per 256 elements are two more
// arguments, <name>_super_scales and <name>_super_offsets, f16 [rows, cols / 256]; the graph
// multiplies the two (exactly) to the f32 scale or offset.
//
// and the graph forms scale * code (+ offset) in f32 where it uses the weight, the same values
// transformers computes with after dequantizing the GGUF. Matrices stored as f16/bf16 stay
// narrow and are widened in the graph; f32 stays f32. Vectors (norms, biases) are f32.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lowering/planar_kernel.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

// A weight as a graph reads it: its values, or the planes of a block format.
struct Weight {
  stablehlo::Value values;  // any float type; for planes, the codes i8 [rows, cols]
  std::optional<stablehlo::Value> scales;
  std::optional<stablehlo::Value> offsets;
  // Two-level planes: the f16 factors per 256 elements of the i8 scales and offsets.
  std::optional<stablehlo::Value> super_scales;
  std::optional<stablehlo::Value> super_offsets;
  // 5- and 6-bit codes: the bits above each nibble, i8 [rows, cols * (code_bits - 4) / 8].
  std::optional<stablehlo::Value> high_bits;
  bool widen = false;  // compute in f32 whatever the stored float type (kAuto)
  // The runtime's product for planes and 16-bit float values, where it has one
  // (GraphOptions::planar_kernel).
  const lowering::PlanarKernel* kernel = nullptr;
  int code_bits = 8;         // planes: 4, 5 or 6 when `values` holds nibbles
  int code_bias = 0;         // nibbles: added to each one
  bool paired_rows = false;  // nibbles in row pairs (_paired_nibbles)
  // The nibbles are E2M1 codes and the scales (i8) their E8M0 exponents (_e2m1_nibbles).
  bool e2m1 = false;
  // An expert of a stack (expert_matrix): the stack and the expert's index (i32 []), which a
  // kernel that reads experts takes in place of the slices above.
  std::shared_ptr<const Weight> stack;
  std::optional<stablehlo::Value> expert;

  Weight(stablehlo::Value v) : values(v) {}  // NOLINT: a plain tensor is a weight
  // Planes; `code_bits` 4 to 6: the codes are nibbles (and high bits), biased as
  // model_files/planar_blocks.h says; `e2m1`: E2M1 nibbles under E8M0 exponents.
  Weight(stablehlo::Value codes, stablehlo::Value scales, std::optional<stablehlo::Value> offsets,
         int code_bits = 8, bool e2m1 = false);

  bool planar() const { return scales.has_value(); }
  int64_t rows() const { return values.shape()[0]; }
  int64_t cols() const { return values.shape()[1] * (code_bits < 8 ? 2 : 1); }
};

// The weight `name` from a graph's arguments (with its planes, if the signature has them);
// `widen` and `kernel` as above.
Weight resident_weight(const std::map<std::string, stablehlo::Value>& arguments,
                       const std::string& name, bool widen,
                       const lowering::PlanarKernel* kernel = nullptr);

// Expert `index` (i32 []) of a mixture's stacked weight ([E, rows, cols] values, or planes with
// the same leading axis: WeightSpec::expert): that expert's matrix, each plane's slice at the
// index (and the stack, for a kernel that reads experts in place).
Weight expert_matrix(const Weight& stacked, stablehlo::Value index);

// The weight as `block` reads it, through captures: for a loop's body or a branch (stablehlo/
// control_flow.h) that uses a weight of the block around it.
Weight captured_in(stablehlo::Block& block, const Weight& weight);

// A planar weight as the runtime's kernel takes it.
lowering::PlanarOperands planar_operands(const Weight& weight);

// The weight's values in f32, [rows, cols] (planes: scale * code (+ offset)).
stablehlo::Value dequantized(const Weight& weight);
// A planar weight's values in f32 by group, [rows, cols / group, group].
stablehlo::Value dequantized_groups(const Weight& weight);
// Whether the runtime's kernel takes the weight, kept as 16-bit floats, for `rows` rows (of x in
// a product, or looked up).
bool wide_kernel_takes(const Weight& weight, int64_t rows);
// Rows `ids` (i32 [T]) of the weight in f32: [T, cols] (embedding lookup): the runtime's kernel
// where it takes them, else a gather behind an optimization barrier so compilers do not fuse the
// lookup into what reads it.
stablehlo::Value take_rows(const Weight& weight, stablehlo::Value ids);

}  // namespace xlacel::models
