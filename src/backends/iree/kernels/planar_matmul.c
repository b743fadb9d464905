// A hand-written product of a few activation rows with a weight kept as planes (i8 codes, f32
// scales and optional f32 offsets per group of 16 or 32 columns), linked into IREE's llvm-cpu
// executables as an external object (IREE's custom-dispatch extension point). The graph's pure
// StableHLO product is the reference this is tested against; this exists because llvm-cpu
// reduces every 32-wide group to a scalar and converts and scales each weight again per row.
//
// Here every weight is dequantized once, exactly as the gguf package and transformers do it
// (scale * code, rounded, then + offset, rounded: no fused multiply-add; built with
// -ffp-contract=off), and then multiplied into every activation row, with per-lane partial sums
// kept across groups and reduced once per output.
//
// Freestanding: IREE embeds this in a library with no libc, no globals and no TLS.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

// Output columns (weight rows) per workgroup; the emitter's workgroup count assumes it.
#define ROWS_PER_WORKGROUP 32
// Activation rows handled; the emitter uses the kernel only up to this many.
#define MAX_ACTIVATION_ROWS 8

#define INLINE static inline __attribute__((always_inline))

// A memref as MLIR's LLVM lowering passes it: allocated and aligned pointers, offset, size and
// stride (1-D memrefs); only the aligned pointer and the offset are used.
#define MEMREF(type, name)                                                    \
  type* restrict name##_allocated, type* restrict name, size_t name##_offset, \
      size_t name##_size, size_t name##_stride

INLINE float horizontal_sum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

// Eight weights of one group: scale * code (+ offset), each step rounded to f32.
INLINE __m256 dequantize8(const int8_t* codes, __m256 scale, __m256 offset, int has_offsets) {
  __m256 code = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)codes)));
  __m256 value = _mm256_mul_ps(scale, code);
  return has_offsets ? _mm256_add_ps(value, offset) : value;
}

// One activation row: four independent accumulators (a chain of dependent FMAs would wait on
// their latency), lanes summed once at the end.
INLINE float row_times_one(const int8_t* codes, const float* scales, const float* offsets,
                           int has_offsets, const float* x, size_t groups, size_t vectors) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (size_t g = 0; g < groups; ++g) {
    const __m256 scale = _mm256_broadcast_ss(scales + g);
    const __m256 offset = has_offsets ? _mm256_broadcast_ss(offsets + g) : scale;
    for (size_t v = 0; v < vectors; ++v) {
      const size_t at = (g * vectors + v) * 8;
      const __m256 w = dequantize8(codes + at, scale, offset, has_offsets);
      acc[v & 3] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + at), acc[v & 3]);
    }
  }
  return horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

// `rows` activation rows (x [rows, k]): each dequantized vector feeds one FMA per row, so the
// rows' chains interleave.
INLINE void row_times_many(const int8_t* codes, const float* scales, const float* offsets,
                           int has_offsets, const float* x, size_t k, size_t rows, size_t groups,
                           size_t vectors, float* out, size_t out_stride) {
  __m256 acc[MAX_ACTIVATION_ROWS];
  for (size_t t = 0; t < rows; ++t) acc[t] = _mm256_setzero_ps();
  for (size_t g = 0; g < groups; ++g) {
    const __m256 scale = _mm256_broadcast_ss(scales + g);
    const __m256 offset = has_offsets ? _mm256_broadcast_ss(offsets + g) : scale;
    for (size_t v = 0; v < vectors; ++v) {
      const size_t at = (g * vectors + v) * 8;
      const __m256 w = dequantize8(codes + at, scale, offset, has_offsets);
      for (size_t t = 0; t < rows; ++t) {
        acc[t] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + t * k + at), acc[t]);
      }
    }
  }
  for (size_t t = 0; t < rows; ++t) out[t * out_stride] = horizontal_sum(acc[t]);
}

// Specialised on the constant row count, group width and offsets so that the loops above unroll
// and the accumulators stay in registers.
#define SPECIALISE(ROWS, VECTORS, OFFSETS)                                                     \
  static void rows##ROWS##_vectors##VECTORS##_offsets##OFFSETS(                                \
      const int8_t* codes, const float* scales, const float* offsets, const float* x,          \
      float* y, size_t n, size_t k, size_t first, size_t last) {                               \
    const size_t groups = k / (VECTORS * 8);                                                   \
    for (size_t row = first; row < last; ++row) {                                              \
      const int8_t* c = codes + row * k;                                                       \
      const float* s = scales + row * groups;                                                  \
      const float* o = OFFSETS ? offsets + row * groups : s;                                   \
      if (ROWS == 1) {                                                                         \
        y[row] = row_times_one(c, s, o, OFFSETS, x, groups, VECTORS);                          \
      } else {                                                                                 \
        row_times_many(c, s, o, OFFSETS, x, k, ROWS, groups, VECTORS, y + row, n);             \
      }                                                                                        \
    }                                                                                          \
  }
#define SPECIALISE_ROWS(ROWS) \
  SPECIALISE(ROWS, 2, 0) SPECIALISE(ROWS, 2, 1) SPECIALISE(ROWS, 4, 0) SPECIALISE(ROWS, 4, 1)
SPECIALISE_ROWS(1)
SPECIALISE_ROWS(2)
SPECIALISE_ROWS(3)
SPECIALISE_ROWS(4)
SPECIALISE_ROWS(5)
SPECIALISE_ROWS(6)
SPECIALISE_ROWS(7)
SPECIALISE_ROWS(8)

// y [rows, n] = x [rows, k] times the weight [n, k] (codes [n, k], scales and offsets
// [n, k / group]) transposed, for weight rows [workgroup * 32, +32). `offsets` is read only when
// has_offsets (the emitter passes the scales again otherwise); group is 16 or 32.
void xlacel_planar_matmul_workgroup(MEMREF(const int8_t, codes), MEMREF(const float, scales),
                                    MEMREF(const float, offsets), MEMREF(const float, x),
                                    MEMREF(float, y), size_t rows, size_t n, size_t k,
                                    size_t group, size_t has_offsets, size_t workgroup) {
  (void)codes_allocated, (void)codes_size, (void)codes_stride;
  (void)scales_allocated, (void)scales_size, (void)scales_stride;
  (void)offsets_allocated, (void)offsets_size, (void)offsets_stride;
  (void)x_allocated, (void)x_size, (void)x_stride;
  (void)y_allocated, (void)y_size, (void)y_stride;
  const size_t first = workgroup * ROWS_PER_WORKGROUP;
  size_t last = first + ROWS_PER_WORKGROUP;
  if (last > n) last = n;
  if (rows < 1 || rows > MAX_ACTIVATION_ROWS || (group != 16 && group != 32)) return;
  codes += codes_offset, scales += scales_offset, offsets += offsets_offset;
  x += x_offset, y += y_offset;
  const int wide = group == 32;
  // A switch, not a table of function pointers: the embedded library may hold no relocated data.
#define CASE(ROWS)                                                                     \
  case ROWS:                                                                           \
    if (wide && has_offsets) {                                                         \
      rows##ROWS##_vectors4_offsets1(codes, scales, offsets, x, y, n, k, first, last); \
    } else if (wide) {                                                                 \
      rows##ROWS##_vectors4_offsets0(codes, scales, offsets, x, y, n, k, first, last); \
    } else if (has_offsets) {                                                          \
      rows##ROWS##_vectors2_offsets1(codes, scales, offsets, x, y, n, k, first, last); \
    } else {                                                                           \
      rows##ROWS##_vectors2_offsets0(codes, scales, offsets, x, y, n, k, first, last); \
    }                                                                                  \
    break;
  switch (rows) {
    CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)
  }
#undef CASE
}
