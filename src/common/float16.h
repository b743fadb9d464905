#pragma once
// 16-bit floats, shared by the model-file readers, the weight loader and the StableHLO constant
// printer. Narrowing rounds to nearest even (what torch's .to(bfloat16/float16) and numpy's
// astype do), keeps NaN a NaN, overflows to infinity and rounds f16 subnormals correctly;
// widening is exact.
#include <cstdint>

namespace xlacel {

uint16_t float_to_bfloat16(float value);
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);

}  // namespace xlacel
