// What the hand-written IREE kernels (planar_matmul.c, decode_attention.c) share: the calling
// convention of a memref argument and the f32 vector they compute with, built once for AVX2 (8
// lanes) and once for AVX-512 (16 lanes); the runtime links the object this CPU runs.
// Freestanding, like the kernels: no libc.
#ifndef XLACEL_KERNEL_VECTORS_H
#define XLACEL_KERNEL_VECTORS_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define INLINE static inline __attribute__((always_inline))

// A memref as MLIR's LLVM lowering passes it: allocated and aligned pointers, offset, size and
// stride (1-D memrefs); only the aligned pointer and the offset are used.
#define MEMREF(type, name)                                                                        \
  type *restrict name##_allocated, type *restrict name, size_t name##_offset, size_t name##_size, \
      size_t name##_stride
// The kernels load and store with unaligned instructions only: an operand may lie at any address
// (the CPU device keeps weights that only kernels read where a model file holds them:
// iree_lowering.cpp, in_place).
// An entry point's use of the MEMREF fields it does not read (all but the aligned pointer and
// the offset).
#define UNUSED_MEMREF_FIELDS(name) (void)name##_allocated, (void)name##_size, (void)name##_stride

#if defined(__AVX512F__)
#define LANES 16
typedef __m512 vec;
#define vec_zero _mm512_setzero_ps
#define vec_broadcast _mm512_set1_ps
#define vec_load _mm512_loadu_ps
#define vec_store _mm512_storeu_ps
#define vec_add _mm512_add_ps
#define vec_sub _mm512_sub_ps
#define vec_mul _mm512_mul_ps
#define vec_div _mm512_div_ps
#define vec_max _mm512_max_ps
#define vec_fmadd _mm512_fmadd_ps
#define vec_fnmadd _mm512_fnmadd_ps
#define vec_sum _mm512_reduce_add_ps
#define vec_hmax _mm512_reduce_max_ps
// Lane r: vec_sum(v[r]), with the same additions (halves, quarters, pairs, then the two lanes
// left), done for the 16 vectors at once: 45 operations where 16 vec_sum take ~150, and no chain
// of dependent adds per vector.
INLINE __m512 vec_sums(const __m512 v[16]) {
  __m512 halves[8], quarters[4], pairs[2];
  for (int i = 0; i < 8; ++i) {  // vector 2i in 128-bit lanes 0-1, 2i + 1 in 2-3
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  }
  for (int i = 0; i < 4; ++i) {  // vector 4i + m in 128-bit lane m
    quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                                _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xdd));
  }
  for (int i = 0; i < 2; ++i) {  // lane m's elements 0-1: vector 8i + m, 2-3: 8i + 4 + m
    pairs[i] = _mm512_add_ps(_mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0xee));
  }
  // Element t of 128-bit lane m: vector 4t + m.
  const __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88),
                                    _mm512_shuffle_ps(pairs[0], pairs[1], 0xdd));
  return _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), sums);
}
#else
#define LANES 8
typedef __m256 vec;
#define vec_zero _mm256_setzero_ps
#define vec_broadcast _mm256_set1_ps
#define vec_load _mm256_loadu_ps
#define vec_store _mm256_storeu_ps
#define vec_add _mm256_add_ps
#define vec_sub _mm256_sub_ps
#define vec_mul _mm256_mul_ps
#define vec_div _mm256_div_ps
#define vec_max _mm256_max_ps
#define vec_fmadd _mm256_fmadd_ps
#define vec_fnmadd _mm256_fnmadd_ps
INLINE float vec_sum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}
// Lane r: vec_sum(v[r]), done for the 8 vectors at once (see the 16-lane vec_sums).
INLINE __m256 vec_sums(const __m256 v[8]) {
  __m256 halves[4], pairs[2];
  for (int i = 0; i < 4; ++i) {  // vector 2i in 128-bit lane 0, 2i + 1 in lane 1
    halves[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                              _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  }
  for (int i = 0; i < 2; ++i) {  // lane h's elements 0-1: vector 4i + h, 2-3: 4i + 2 + h
    pairs[i] = _mm256_add_ps(_mm256_shuffle_ps(halves[2 * i], halves[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(halves[2 * i], halves[2 * i + 1], 0xee));
  }
  // Element t of 128-bit lane h: vector 2t + h.
  const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(pairs[0], pairs[1], 0x88),
                                    _mm256_shuffle_ps(pairs[0], pairs[1], 0xdd));
  return _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
INLINE float vec_hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
#endif

#endif  // XLACEL_KERNEL_VECTORS_H
