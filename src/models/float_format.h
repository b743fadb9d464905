#pragma once
// f32 -> bf16 / f16 narrowing with round-to-nearest-even (what torch's .to(bfloat16/float16) and
// numpy's astype do), NaN kept NaN, overflow to infinity, f16 subnormals rounded correctly.
#include <cstdint>

namespace xlacel::models {

uint16_t float_to_bfloat16(float value);
uint16_t float_to_half(float value);

}  // namespace xlacel::models
