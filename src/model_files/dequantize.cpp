#include "model_files/dequantize.h"

#include "model_files/little_endian.h"
#include "model_files/planar_blocks.h"

#include "common/float16.h"

#include <cstdint>
#include <cstring>

namespace xlacel {

void dequantize(DType dtype, std::span<const std::byte> in, std::span<float> out) {
  switch (dtype) {
    case DType::kF32:
      if (!out.empty()) std::memcpy(out.data(), in.data(), out.size() * sizeof(float));
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = half_to_float(load_little_endian<uint16_t>(&in[2 * i]));
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = bfloat16_to_float(load_little_endian<uint16_t>(&in[2 * i]));
      }
      return;
    default: {
      // Block formats: through their planes, so the graphs' in-place dequantization and this
      // host path share one definition of every value.
      planar_to_f32(to_planar(dtype, in, out.size()), out);
      return;
    }
  }
}

}  // namespace xlacel
