#pragma once
// 16-bit floats, shared by the model-file readers, the weight loader and the StableHLO constant
// printer. Narrowing rounds to nearest even (what torch's .to(bfloat16/float16) and numpy's
// astype do), keeps NaN a NaN, overflows to infinity and rounds f16 subnormals correctly;
// widening is exact.
#include <cstdint>
#include <span>

namespace xlacel {

uint16_t float_to_bfloat16(float value);
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);

// out[i] = float_to_half(values[i]) or float_to_bfloat16(values[i]) (the same bits), for whole
// planes at load: on every core, f16 through F16C where the CPU has it (a model's millions of
// scales one at a time were a visible part of its start: docs/PERFORMANCE.md, "Bulk f16
// narrowing"). `out` must be as long as `values`.
void floats_to_halves(std::span<const float> values, std::span<uint16_t> out);
void floats_to_bfloat16s(std::span<const float> values, std::span<uint16_t> out);

}  // namespace xlacel
