#pragma once
// GGML block formats split into planes a graph can use directly: one signed integer code per
// element and, per group of 16 or 32 consecutive elements of a row, an f32 scale and (for the
// formats with a minimum) an f32 offset, such that
//
//   value = scale * code            (Q8_0, Q4_0, Q5_0, Q6_K; MXFP4, whose code is the E2M1
//                                    value its nibble stands for, doubled: -12 to 12)
//   value = scale * code + offset   (Q4_1, Q5_1, Q4_K, Q5_K)
//
// computed in f32 gives exactly the gguf Python package's dequantized value (which is what
// transformers computes with). The per-group scale and offset are the products the package forms
// before touching the codes (Q4_K: d * sc and -(dmin * m)), so no rounding moves: a - b is
// a + (-b) in IEEE arithmetic. Formats without a minimum have no offset plane, because adding
// +0 would turn a -0 value into +0.
//
// The 4-, 5- and 6-bit formats keep the low 4 bits of two codes per byte ("nibbles"), which
// halves the bytes a product reads: per 32 elements, byte j holds element j's nibble in its low
// half and element j + 16's in its high half. The 5- and 6-bit formats (Q5_0, Q5_1, Q5_K, Q6_K)
// keep the bits above in a second plane ("high bits"): per 32 elements B = 4 (5-bit) or 8
// (6-bit) bytes, element e's b = 1 or 2 bits at byte e % B, bits b * (e / B) up (so that a
// vector of consecutive elements takes its bits from consecutive bytes at one shift). The code is
// the packed value plus a bias: 0 for formats with a minimum, else minus half the range (-8, -16
// or -32: the codes are centred). MXFP4's nibbles are its E2M1 codes as the file stores them
// (the same layout), each standing for kE2M1Doubled[nibble]; its scale is kept as the file's
// E8M0 exponent byte e, the scale being 2^(e - 128) (planar_codes_are_e2m1), so the planes hold
// the file's 17 bytes per 32 elements.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/aligned_vector.h"
#include "model_files/tensor.h"

namespace xlacel {

bool is_block_quantized(DType dtype);
// Elements per scale: 16 for Q6_K, 32 for the others.
int64_t planar_group_size(DType dtype);
bool planar_has_offsets(DType dtype);
// Whether the format's scales (and offsets) are f16 numbers as the file stores them (Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1: d and m), so that an f16 plane holds them exactly and the planes keep the
// file's bytes.
bool planar_scales_are_f16(DType dtype);
// Whether the format's scales (and offsets) are products of an f16 per super-block of 256 and a
// small integer per group (the K-quants: d * sc, -(dmin * m)). Such planes are kept as the file
// keeps them, i8 per group and f16 per 256 elements, and multiplied where they are used: the
// product (11 by at most 8 significant bits) is exact in f32, so it is the value the gguf
// package forms.
bool planar_scales_are_two_level(DType dtype);
// Whether the format's nibbles are E2M1 codes (kE2M1Doubled) and its scales E8M0 exponents
// (e8m0_half_scale), kept as bytes: MXFP4.
bool planar_codes_are_e2m1(DType dtype);
// The value each E2M1 code stands for, doubled (gguf's kvalues): sign bit 3, then 2 exponent bits
// and 1 mantissa bit. Code 8 (-0) is 0, as gguf tabulates it.
inline constexpr int8_t kE2M1Doubled[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};
// The scale of an E8M0 exponent e under which kE2M1Doubled's values are MXFP4's: 2^(e - 128)
// (gguf's e8m0_to_fp32_half; a subnormal below e = 2, which the CPU runtimes, computing with
// subnormals flushed to zero, take as 0: values of at most 12 * 2^-127, which no real weight
// has).
float e8m0_half_scale(uint8_t e);
// Elements per super-block of the two-level formats.
inline constexpr int64_t kSuperGroupSize = 256;
// Bits per stored code: 4, 5 or 6 (nibbles, and high bits above 4), or 8 (one i8 per element).
int planar_code_bits(DType dtype);
// What is added to a packed value to give its code: the one rule both the packing and the graphs
// follow.
// E2M1 codes take none (their table gives the value).
inline int packed_code_bias(int code_bits, bool has_offsets, bool e2m1) {
  return code_bits == 8 || has_offsets || e2m1 ? 0 : -(1 << (code_bits - 1));
}
// Bytes of the high-bits plane per row of `cols` elements (0 for 4- and 8-bit codes).
inline int64_t high_bits_row_bytes(int code_bits, int64_t cols) {
  return code_bits == 5 || code_bits == 6 ? cols * (code_bits - 4) / 8 : 0;
}

struct PlanarBlocks {
  int64_t group_size = 32;
  int code_bits = 8;                // 8: one i8 code per element; 4, 5, 6: nibbles, as above
  int code_bias = 0;                // packed codes only: added to each packed value
  AlignedVector<int8_t> codes;      // row-major like the tensor (a byte holds two nibbles)
  AlignedVector<int8_t> high_bits;  // 5- and 6-bit codes: their bits above the nibble, as above
  AlignedVector<float> scales;      // one per group (empty where to_planar keeps scale_codes only)
  AlignedVector<float> offsets;     // one per group; empty when the format has none
  bool scales_f16 = false;  // every scale and offset is an f16 number (planar_scales_are_f16)
  // The nibbles are E2M1 codes and scale_codes their E8M0 exponents (planar_codes_are_e2m1):
  // code = kE2M1Doubled[nibble], scales[g] = e8m0_half_scale(scale_codes[g]).
  bool e2m1 = false;
  // Two-level formats (planar_scales_are_two_level) and E2M1's exponents, else empty: for the
  // former scales[g] is super_scales[g / (256 / group_size)] * scale_codes[g], offsets[g]
  // likewise (super_offsets holds -dmin, so the product is the offset's sign and all).
  AlignedVector<int8_t> scale_codes;
  AlignedVector<float> super_scales;  // f16 numbers
  AlignedVector<int8_t> offset_codes;
  AlignedVector<float> super_offsets;  // f16 numbers
};

// `in` must hold whole blocks of `dtype` (a block-quantized type) for `elements` elements.
// scale_products false: a format whose scales (and offsets) are formed from codes (two-level,
// E2M1's exponents) keeps only those (scales and offsets stay empty), as the device holds them;
// their f32 products would be ~0.25 bytes per weight written and dropped at load.
PlanarBlocks to_planar(DType dtype, std::span<const std::byte> in, std::size_t elements,
                       bool scale_products = true);

// scale * code (+ offset) per element, in f32, into `out` (scales.size() * group_size elements).
void planar_to_f32(const PlanarBlocks& planar, std::span<float> out);

// 4-bit codes may be kept in row pairs for a kernel that reads two weight rows at once: rows 2p
// and 2p + 1 alternate line by line (kCodeLineBytes each), so that the kernel reads one ascending
// stream instead of two. Byte b of row r then lies at
//
//   (r - r % 2) * row_bytes + (b / 64) * 128 + (r % 2) * 64 + b % 64
//
// Only nibbles without high bits (Q4_0, Q4_1, Q4_K; MXFP4's too, though the loader keeps none
// in pairs: only experts are MXFP4, and experts stay row after row), in rows of whole lines (cols a
// multiple of 128) and an even number of rows.
inline constexpr int64_t kCodeLineBytes = 64;
bool can_pair_code_rows(int code_bits, int64_t rows, int64_t cols);
// `codes` (rows of row_bytes, row after row) rearranged in place into row pairs.
void pair_code_rows(std::span<int8_t> codes, int64_t rows, int64_t row_bytes);

}  // namespace xlacel
