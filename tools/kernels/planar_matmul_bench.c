// Times the IREE planar kernel (src/backends/iree/kernels/planar_matmul.c, included whole) on
// one thread, outside IREE: random planes of one format, x of `rows` rows, every workgroup of
// the product called in turn as the runtime would. Prints the best time of `reps`, the bytes of
// the weight read per second, weights per second and a checksum of y and a hash of its bits
// (equal hashes across kernel versions: the same bits). Built and run by planar_matmul_bench (next
// to this file), which also builds a second version of the kernel to compare against.
//
//   planar_matmul_bench FORMAT N K ROWS REPS   (FORMAT: q4_0 q4_1 q4k q5_0 q5_1 q5k q6k q8_0
//                                               mxfp4, or
//                                               bf16 f16: xlacel_wide_matmul_workgroup; a block
//                                               format + "-int8": --math fast's product,
//                                               xlacel_planar_matmul_int8_workgroup, built with
//                                               --isa avx512vnni; q4_0, q4_1, q4k + "-paired":
//                                               the same codes in row pairs, so the same bits)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include KERNEL_SOURCE

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint16_t half(float f) {
  return _cvtss_sh(f, 0);
}

// x quantized for the int8 rows product as the graph quantizes it: packed codes take x in pair
// order where the kernel has it (PLANAR_INT8_PAIRS), Q8_0's bytes in column order.
static void quantize_for_rows(float* x, int8_t* out, size_t rows, size_t k, size_t code_bits) {
#ifdef PLANAR_INT8_PAIRS
  if (code_bits != 8) {
    xlacel_quantize_int8_pairs_workgroup(x, x, 0, 0, 0, out, out, 0, 0, 0, rows, k, rows, 0);
    return;
  }
#else
  (void)code_bits;
#endif
  xlacel_quantize_int8_columns_workgroup(x, x, 0, 0, 0, out, out, 0, 0, 0, rows, k, rows, 0);
}

// Whether `format` names `suffix`, which is then cut out of it.
static int take_suffix(char* format, const char* suffix) {
  char* at = strstr(format, suffix);
  if (at == NULL) return 0;
  memmove(at, at + strlen(suffix), strlen(at + strlen(suffix)) + 1);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s FORMAT N K ROWS REPS\n", argv[0]);
    return 2;
  }
  char format[32];
  snprintf(format, sizeof format, "%s", argv[1]);
  // Suffixes in any order, each cut out of the name (not the name cut at it, which would drop
  // the ones after it): "-paired", codes in row pairs; "-int8row", --math fast's decode product
  // (x quantized in column or pair order), timed, and its outputs' relative deviation from the
  // exact product's printed; "-int8", x quantized as --math fast's prefill does.
  const int paired = take_suffix(format, "-paired");
  const int int8row = take_suffix(format, "-int8row");
  const int int8 = take_suffix(format, "-int8");
#if !defined(PLANAR_PAIRED_CODES)
  if (paired) {
    fprintf(stderr, "this kernel takes no paired codes\n");
    return 2;
  }
#endif
  const size_t n = strtoul(argv[2], NULL, 10), k = strtoul(argv[3], NULL, 10);
  const size_t rows = strtoul(argv[4], NULL, 10), reps = strtoul(argv[5], NULL, 10);
  size_t code_bits = 4, group = 32, has_offsets = 0, scale_bits = 16, e2m1 = 0;
  ptrdiff_t bias = 0;
  // 16-bit float weights (the wide product): 1 for bf16, 0 for f16, -1 for the planar formats.
  const int wide_bf16 = !strcmp(format, "bf16") ? 1 : !strcmp(format, "f16") ? 0 : -1;
  if (wide_bf16 >= 0) {
    code_bits = 8;  // unused: the planes below stay small
  } else if (!strcmp(format, "q4_0")) {
    bias = -8;
  } else if (!strcmp(format, "q4_1")) {
    has_offsets = 1;
  } else if (!strcmp(format, "q4k")) {
    has_offsets = 1, scale_bits = 8;
  } else if (!strcmp(format, "q5_0")) {
    code_bits = 5, bias = -16;
  } else if (!strcmp(format, "q5_1")) {
    code_bits = 5, has_offsets = 1;
  } else if (!strcmp(format, "q5k")) {
    code_bits = 5, has_offsets = 1, scale_bits = 8;
  } else if (!strcmp(format, "q6k")) {
    code_bits = 6, group = 16, bias = -32, scale_bits = 8;
  } else if (!strcmp(format, "q8_0")) {
    code_bits = 8;
  } else if (!strcmp(format, "mxfp4")) {
#if !defined(PLANAR_E2M1_CODES)
    fprintf(stderr, "this kernel takes no E2M1 codes\n");
    return 2;
#endif
    e2m1 = 1, scale_bits = 8;
  } else {
    fprintf(stderr, "unknown format %s\n", format);
    return 2;
  }
  const size_t code_bytes = wide_bf16 >= 0 ? n * k * 2 : code_bits == 8 ? n * k : n * k / 2;
  const size_t high_bytes = code_bits == 5 || code_bits == 6 ? n * k * (code_bits - 4) / 8 : 0;
  const size_t groups = n * k / group, scale_width = scale_bits / 8, supers = n * k / 256;
  uint8_t* codes = aligned_alloc(64, code_bytes + 64);
  uint8_t* highs = aligned_alloc(64, high_bytes + 64);
  uint8_t* scales = aligned_alloc(64, groups * 4 + 64);
  uint8_t* offsets = aligned_alloc(64, groups * 4 + 64);
  uint16_t* super_scales = aligned_alloc(64, supers * 2 + 64);
  uint16_t* super_offsets = aligned_alloc(64, supers * 2 + 64);
  float* x = aligned_alloc(64, rows * k * 4 + 64);
  float* y = aligned_alloc(64, rows * n * 4 + 64);
  srand(1);
  for (size_t i = 0; i < code_bytes; ++i) codes[i] = (uint8_t)rand();
  if (wide_bf16 >= 0) {  // finite values in [-1, 1]: a float's top half (bf16) or a half
    for (size_t i = 0; i < n * k; ++i) {
      const float f = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      ((uint16_t*)codes)[i] = wide_bf16 ? (uint16_t)(bits >> 16) : half(f);
    }
  }
  if (paired) {
    // The same rows, rows 2p and 2p + 1 alternating by 64-byte line (the kernel's code_row).
    const size_t row_bytes = k / 2;
    if (code_bits != 4 || k % 128 != 0 || n % 2 != 0) {
      fprintf(stderr, "-paired takes 4-bit formats, k a multiple of 128 and n even\n");
      return 2;
    }
    uint8_t* pairs = aligned_alloc(64, code_bytes + 64);
    for (size_t row = 0; row < n; ++row) {
      for (size_t b = 0; b < row_bytes; ++b) {
        pairs[(row / 2) * 2 * row_bytes + (b / 64) * 128 + (row % 2) * 64 + b % 64] =
            codes[row * row_bytes + b];
      }
    }
    free(codes);
    codes = pairs;
  }
  for (size_t i = 0; i < high_bytes; ++i) highs[i] = (uint8_t)rand();
  for (size_t g = 0; g < groups; ++g) {
    if (scale_width == 1) {
      // Q6_K's scales are signed: both signs, so that a kernel change that treats them
      // differently shows in the hash.
      // MXFP4's exponents: scales 2^-12 to 2^-5, as real experts'.
      scales[g] = (uint8_t)(e2m1 ? 116 + rand() % 8 : code_bits == 6 ? rand() % 256 : rand() % 64);
      offsets[g] = (uint8_t)(rand() % 64);
    } else {
      ((uint16_t*)scales)[g] = half((float)(rand() % 1000) * 1e-5f);
      ((uint16_t*)offsets)[g] = half(-(float)(rand() % 1000) * 1e-4f);
    }
  }
  for (size_t i = 0; i < supers; ++i) {
    super_scales[i] = half((float)(rand() % 1000) * 1e-6f);
    super_offsets[i] = half(-(float)(rand() % 1000) * 1e-6f);
  }
  for (size_t i = 0; i < rows * k; ++i) {
    x[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * (i % 97 == 0 ? 20.0f : 1.0f);
  }
  // As backends/iree/iree_planar_kernel.cpp splits a product of many rows (16 workgroups, whole
  // 8-row blocks; fewer rows take one workgroup per worker thread).
  size_t rows_per_workgroup = (n + 127) / 128 * 8;
  if (rows_per_workgroup < 8) rows_per_workgroup = 8;
  const size_t workgroups = (n + rows_per_workgroup - 1) / rows_per_workgroup;
#if defined(__AVX512VNNI__)
  // x in the int8 product's layout: per row and block of 32, scale max|x| / 127 and codes
  // round(x / scale), and per 16 columns scale times the sum of the codes; per whole run of 512
  // columns, vector v holds elements 4v .. 4v + 3 of each block, lane p block INT8_LANE_BLOCK(p);
  // the columns past the runs per group of four blocks, elements 0-15 of each then 16-31, padded
  // with zero blocks to whole groups (width), as quantize_int8_row lays them out (written
  // separately here, in plain C: a second statement of the layout).
  const size_t width = (k + 127) / 128 * 128, run_columns = k / 512 * 512;
  int8_t* qx = aligned_alloc(64, rows * width + 64);
  float* xd = aligned_alloc(64, rows * width / 32 * 4 + 64);
  float* xs = aligned_alloc(64, rows * width / 16 * 4 + 64);
  if (int8) {
    for (size_t t = 0; t < rows; ++t) {
      for (size_t column = 0; column < width; column += 32) {
        // Where this block goes: in a run, lane p of run b (INT8_LANE_BLOCK is its own inverse, a
        // 4x4 transpose); in the tail, block `block` of its group of four.
        const size_t b = column / 512, p = INT8_LANE_BLOCK(column % 512 / 32);
        const float* block = x + t * k + column;
        float largest = 0;
        for (size_t e = 0; column < k && e < 32; ++e) largest = fmaxf(largest, fabsf(block[e]));
        const float scale = largest / 127, inverse = largest > 0 ? 127 / largest : 0;
        float sums[2] = {0, 0};
        for (size_t e = 0; e < 32; ++e) {
          const float q = column < k ? nearbyintf(block[e] * inverse) : 0;
          sums[e / 16] += q;
          const size_t group = column / 128 * 128, block = column / 32 % 4;
          const size_t at = column < run_columns ? b * 512 + (e / 4) * 64 + 4 * p + e % 4
                                                 : group + (e / 16) * 64 + block * 16 + e % 16;
          qx[t * width + at] = (int8_t)q;
        }
        const size_t d = column < run_columns ? b * 16 + p : column / 32;
        xd[t * (width / 32) + d] = scale;
        for (size_t h = 0; h < 2; ++h) {
          const size_t at = column < run_columns ? b * 32 + 16 * h + p : column / 16 + h;
          xs[t * (width / 16) + at] = scale * sums[h];
        }
      }
    }
  }
#else
  if (int8) {
    fprintf(stderr, "-int8 needs the kernel built with VNNI (--isa avx512vnni)\n");
    return 2;
  }
#endif
  int8_t* qcols = aligned_alloc(64, rows * k * 2 + 64);  // qx, xd, xs (quantize_for_rows)
  float* exact = aligned_alloc(64, rows * n * 4 + 64);
  if (int8row) {
    quantize_for_rows(x, qcols, rows, k, code_bits);
    for (size_t w = 0; w < workgroups; ++w) {
      xlacel_planar_matmul_workgroup(
          codes, codes, 0, 0, 0, highs, highs, 0, 0, 0, scales, scales, 0, 0, 0, offsets, offsets,
          0, 0, 0, super_scales, super_scales, 0, 0, 0, super_offsets, super_offsets, 0, 0, 0, x, x,
          0, 0, 0, exact, exact, 0, 0, 0, rows, n, k, group, has_offsets, code_bits, bias,
          (size_t)e2m1, scale_bits, (size_t)paired, rows_per_workgroup, w);
    }
  }
  double best = 1e30;
  for (size_t r = 0; r < reps; ++r) {
    if (int8row) {
      const double start = now();
      quantize_for_rows(x, qcols, rows, k, code_bits);
      for (size_t w = 0; w < workgroups; ++w) {
        xlacel_planar_matmul_int8_rows_workgroup(
            codes, codes, 0, 0, 0, highs, highs, 0, 0, 0, scales, scales, 0, 0, 0, offsets, offsets,
            0, 0, 0, super_scales, super_scales, 0, 0, 0, super_offsets, super_offsets, 0, 0, 0,
            qcols, qcols, 0, 0, 0, y, y, 0, 0, 0, rows, n, k, group, has_offsets, code_bits, bias,
            (size_t)e2m1, scale_bits, (size_t)paired, rows_per_workgroup, w);
      }
      const double seconds = now() - start;
      if (seconds < best) best = seconds;
      continue;
    }
    const double start = now();
    for (size_t w = 0; w < workgroups; ++w) {
      if (wide_bf16 >= 0) {
        xlacel_wide_matmul_workgroup((const uint16_t*)codes, (const uint16_t*)codes, 0, 0, 0, x, x,
                                     0, 0, 0, y, y, 0, 0, 0, rows, n, k, (size_t)wide_bf16,
                                     rows_per_workgroup, w);
        continue;
      }
#if defined(__AVX512VNNI__)
      if (int8) {
        xlacel_planar_matmul_int8_workgroup(
            codes, codes, 0, 0, 0, highs, highs, 0, 0, 0, scales, scales, 0, 0, 0, offsets, offsets,
            0, 0, 0, super_scales, super_scales, 0, 0, 0, super_offsets, super_offsets, 0, 0, 0, qx,
            qx, 0, 0, 0, xd, xd, 0, 0, 0, xs, xs, 0, 0, 0, y, y, 0, 0, 0, rows, n, k, group,
            has_offsets, code_bits, bias,
#if defined(PLANAR_E2M1_CODES)
            (size_t)e2m1,
#endif
            scale_bits,
#if defined(PLANAR_PAIRED_CODES)
            (size_t)paired,
#endif
            rows_per_workgroup, w);
        continue;
      }
#endif
      xlacel_planar_matmul_workgroup(codes, codes, 0, 0, 0, highs, highs, 0, 0, 0, scales, scales,
                                     0, 0, 0, offsets, offsets, 0, 0, 0, super_scales, super_scales,
                                     0, 0, 0, super_offsets, super_offsets, 0, 0, 0, x, x, 0, 0, 0,
                                     y, y, 0, 0, 0, rows, n, k, group, has_offsets, code_bits, bias,
#if defined(PLANAR_E2M1_CODES)
                                     (size_t)e2m1,
#endif
                                     scale_bits,
#if defined(PLANAR_PAIRED_CODES)
                                     (size_t)paired,
#endif
                                     rows_per_workgroup, w);
    }
    const double seconds = now() - start;
    if (seconds < best) best = seconds;
  }
  double checksum = 0;
  for (size_t i = 0; i < rows * n; ++i) checksum += y[i];
  if (int8row) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < rows * n; ++i) {
      diff += ((double)y[i] - exact[i]) * ((double)y[i] - exact[i]);
      norm += (double)exact[i] * exact[i];
    }
    printf("int8row: |y - exact| / |exact| = %.3g  ", sqrt(diff / norm));
  }
  // FNV-1a of y's bytes: equal across kernel versions exactly when every output has the same
  // bits (the sum above can hide a last-bit difference).
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < rows * n * sizeof(float); ++i) {
    hash = (hash ^ ((const uint8_t*)y)[i]) * 1099511628211ull;
  }
  const double bytes =
      wide_bf16 >= 0 ? (double)code_bytes
                     : (double)(code_bytes + high_bytes + groups * scale_width * (1 + has_offsets) +
                                (scale_width == 1 ? supers * 2 * (1 + has_offsets) : 0));
  printf(
      "%s%s%s n=%zu k=%zu rows=%zu: %.1f us  %.2f GB/s  %.2f G weights/s  %.1f GFLOP/s  checksum "
      "%.6g  bits %016llx\n",
      format,
      int8row ? "-int8row"
      : int8  ? "-int8"
              : "",
      paired ? "-paired" : "", n, k, rows, best * 1e6, bytes / best / 1e9,
      (double)n * (double)k / best / 1e9, 2.0 * (double)n * (double)k * (double)rows / best / 1e9,
      checksum, (unsigned long long)hash);
  return 0;
}
