#pragma once
// Widening and GGML block dequantization to f32. Each routine follows the gguf Python
// package's arithmetic order (so results are bit-identical), not just its math.
#include <cstddef>
#include <span>

#include "common/float16.h"
#include "model_files/tensor.h"

namespace xlacel {

// `in` must hold exactly out.size() elements of `dtype` (callers check sizes).
void dequantize(DType dtype, std::span<const std::byte> in, std::span<float> out);

}  // namespace xlacel
