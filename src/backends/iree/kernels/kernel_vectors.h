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
INLINE float vec_hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
#endif

#endif  // XLACEL_KERNEL_VECTORS_H
