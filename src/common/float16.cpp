#include "common/float16.h"

#include <bit>
#include <cstddef>

#include "common/parallel_slices.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace xlacel {

namespace {

// Narrows `values` into `out` one value at a time with Narrow.
template <uint16_t (*Narrow)(float)>
void one_by_one(std::span<const float> values, std::span<uint16_t> out) {
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = Narrow(values[i]);
}

// narrow(values, out) on each thread's slice, on every core for a large plane.
template <typename Narrow>
void narrow_all(std::span<const float> values, std::span<uint16_t> out, const Narrow& narrow) {
  for_each_slice(
      load_pass_threads(values.size()), values.size(),
      [&](int, std::size_t begin, std::size_t end) {
        narrow(values.subspan(begin, end - begin), out.subspan(begin, end - begin));
      },
      64);
}

#if defined(__x86_64__)
// F16C and AVX, read from CPUID leaf 1 (ECX bits 29 and 28): clang before 15 knows no "f16c"
// for __builtin_cpu_supports, and the fuzzing build uses clang.
bool has_f16c_and_avx() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0 && (ecx & (1u << 28)) != 0 && __builtin_cpu_supports("avx");
}

// vcvtps2ph rounds to nearest even like float_to_half, overflows to infinity and rounds
// subnormals alike; only a NaN's bits may differ, so a vector holding one goes one by one.
__attribute__((target("avx,f16c"))) void halves_f16c(std::span<const float> values,
                                                     std::span<uint16_t> out) {
  std::size_t i = 0;
  for (; i + 8 <= values.size(); i += 8) {
    const __m256 v = _mm256_loadu_ps(values.data() + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      one_by_one<float_to_half>(values.subspan(i, 8), out.subspan(i, 8));
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  one_by_one<float_to_half>(values.subspan(i), out.subspan(i));
}
#endif

}  // namespace

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t float_to_half(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  int32_t exponent = static_cast<int32_t>(magnitude >> 23) - 127;
  uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;  // 24 significant bits
  uint32_t result;
  if (exponent < -25) {
    result = 0;  // below half the smallest subnormal (2^-25): rounds to zero
  } else {
    // Normal halves keep 11 significant bits; subnormals (exponent < -14) keep fewer.
    int32_t shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
    uint32_t kept = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) ++kept;
    if (exponent >= -14) {
      // kept is in [2^10, 2^11]; a carry to 2^11 moves into the next exponent naturally.
      result = (static_cast<uint32_t>(exponent + 14) << 10) + kept;
    } else {
      result = kept;  // subnormal (a carry to 2^10 becomes the smallest normal)
    }
  }
  return static_cast<uint16_t>(sign | result);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3FF) << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000 | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(uint32_t{bits} << 16);
}

void floats_to_halves(std::span<const float> values, std::span<uint16_t> out) {
#if defined(__x86_64__)
  static const bool f16c = has_f16c_and_avx();
  if (f16c) {
    narrow_all(values, out, halves_f16c);
    return;
  }
#endif
  narrow_all(values, out, one_by_one<float_to_half>);
}

void floats_to_bfloat16s(std::span<const float> values, std::span<uint16_t> out) {
  narrow_all(values, out, one_by_one<float_to_bfloat16>);
}

}  // namespace xlacel
