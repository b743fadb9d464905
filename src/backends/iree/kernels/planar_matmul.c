// A hand-written product of activation rows with a weight kept as planes (codes, scales and
// optional offsets per group of 16 or 32 columns), linked into IREE's llvm-cpu executables as
// an external object (IREE's custom-dispatch extension point). The graph's pure StableHLO product
// is the reference this is tested against; this exists because llvm-cpu reduces every 32-wide
// group to a scalar and converts and scales each weight again per row.
//
// Codes come one per byte (i8), or two per byte (nibbles: per group of 32, byte j holds element
// j in its low nibble and element j + 16 in its high nibble; the code is the nibble, less 8 when
// the weight is centred, or for MXFP4 the E2M1 value the nibble stands for, doubled, under a
// scale given as its E8M0 exponent byte). Nibbles halve the bytes a 4-bit format reads. Scales and
// offsets are f16 where the format stores them so (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: widened exactly,
// so the weight keeps the file's bytes), f32 where they are products, or two-level as the K-quants
// store them: an i8 per group times an f16 per 256 elements, multiplied here (exact in f32: the
// value the gguf package forms), so those weights keep the file's bytes too.
//
// Here every weight is dequantized exactly as the gguf package and transformers do it
// (scale * code, rounded, then + offset, rounded: no fused multiply-add; built with
// -ffp-contract=off), and then multiplied into up to MAX_ACTIVATION_ROWS activation rows at a
// time, with per-lane partial sums kept across groups and reduced once per output.
//
// Freestanding: IREE embeds this in a library with no libc, no globals and no TLS.
#include "kernel_vectors.h"

// How far ahead of the weight row in hand its planes are prefetched. Streaming the weights from
// memory is what a product of few rows waits on; without software prefetch, one thread reads
// nibbles at a fraction of the rate it reaches with it (hardware prefetchers do not run far
// enough ahead of three interleaved streams). 3072 rather than 1536 as measured, not derived:
// it decoded faster, 4096 tied it and 6144 was slower (docs/PERFORMANCE.md, "PREFETCH_BYTES").
#define PREFETCH_BYTES 3072
// Activation rows multiplied per pass over a weight row: one accumulator register each, so 16
// where AVX-512 gives 32 vector registers (prefill's products faster than with 8:
// docs/PERFORMANCE.md, "MAX_ACTIVATION_ROWS"), else 8.
#if defined(__AVX512F__)
#define MAX_ACTIVATION_ROWS 16
#else
#define MAX_ACTIVATION_ROWS 8
#endif

// How a weight's codes are stored (the specialisations below).
enum CodeForm {
  BYTES_32,                  // i8, groups of 32 (Q8_0)
  NIBBLES_32,                // nibbles, code = nibble (Q4_1, Q4_K: formats with offsets)
  NIBBLES_32_CENTRED,        // nibbles, code = nibble - 8 (Q4_0)
  NIBBLES_HIGH1_32,          // nibbles and a high bit, code = 5 bits (Q5_1, Q5_K)
  NIBBLES_HIGH1_32_CENTRED,  // as NIBBLES_HIGH1_32, less 16 (Q5_0)
  NIBBLES_HIGH2_16_CENTRED,  // nibbles and 2 high bits, less 32, groups of 16 (Q6_K)
  // As NIBBLES_32 and NIBBLES_32_CENTRED, the rows in pairs (code_row): forms of their own, so
  // that every specialisation addresses the codes with constants.
  NIBBLES_32_PAIRED,
  NIBBLES_32_CENTRED_PAIRED,
  // E2M1 nibbles (MXFP4), code = the E2M1 value the nibble stands for, doubled (kE2M1Doubled),
  // always under SCALES_E8M0.
  NIBBLES_32_E2M1,
};

// What E2M1 codes are biased by where they are read as unsigned bytes (8 lanes: nibble_weights;
// the int8 product: four_block_codes), each the value it stands for, doubled
// (model_files/planar_blocks.h, kE2M1Doubled), plus 12.
#define E2M1_BIAS 12
// Those bytes, indexed by the code: the table one byte shuffle reads per 16 codes.
INLINE __m128i e2m1_biased_values(void) {
  return _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

// Whether the form's rows go in pairs (code_row).
INLINE int pairs_rows(enum CodeForm form) {
  return form == NIBBLES_32_PAIRED || form == NIBBLES_32_CENTRED_PAIRED;
}

// What the centred forms take off their unsigned code (code = u - bias); 0 for the others.
INLINE int code_bias(enum CodeForm form) {
  switch (form) {
    case NIBBLES_32_CENTRED:
    case NIBBLES_32_CENTRED_PAIRED:
      return 8;
    case NIBBLES_HIGH1_32_CENTRED:
      return 16;
    case NIBBLES_HIGH2_16_CENTRED:
      return 32;
    case NIBBLES_32_E2M1:
      return E2M1_BIAS;  // as 8 lanes read them (nibble_weights)
    default:
      return 0;
  }
}

// Codes widened to f32 lanes, per vector width (kernel_vectors.h).
#if LANES == 16
// Sixteen i8 codes as f32 lanes.
INLINE vec widen(__m128i bytes) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
}
INLINE __m128i load_codes(const uint8_t* p) {
  return _mm_loadu_si128((const __m128i*)p);
}
#else
// Eight i8 codes (the low half of `bytes`) as f32 lanes.
INLINE vec widen(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}
INLINE __m128i load_codes(const uint8_t* p) {
  return _mm_loadl_epi64((const __m128i*)p);
}
#endif

// One line of a weight row's codes or high bits, in a one-x-row pass: the line as many rows
// ahead as prefetch_rows says, at the position the pass has reached. A pass reads its rows'
// codes a line at a time, so prefetching them line by line keeps the stream of misses as even
// as the reads; prefetching a whole row at the pass's start (as the scale planes still are)
// issued 64 prefetches at once for a row of 8192 nibbles, more than the core keeps in flight,
// and streamed far fewer weights per second from memory (the same bits; docs/PERFORMANCE.md,
// "stream_prefetch"). A prefetch past the weight's end (the last rows') does not fault.
INLINE void stream_prefetch(const uint8_t* line) {
  _mm_prefetch((const char*)line, _MM_HINT_T0);
}

// Most vectors a group spans (32 codes of 8 lanes).
#define MAX_VECTORS_PER_GROUP 4

// Codes per scale: Q6_K's groups of 16, every other form's of 32.
INLINE size_t form_group(enum CodeForm form) {
  return form == NIBBLES_HIGH2_16_CENTRED ? 16 : 32;
}

INLINE size_t vectors_per_group(enum CodeForm form) {
  return form_group(form) / LANES;
}

// Bits above the nibble per code (the high-bits plane), and bytes of codes and of high bits per
// weight row of k columns.
INLINE size_t high_bits_per_code(enum CodeForm form) {
  if (form == NIBBLES_HIGH1_32 || form == NIBBLES_HIGH1_32_CENTRED) return 1;
  return form == NIBBLES_HIGH2_16_CENTRED ? 2 : 0;
}
INLINE size_t code_row_bytes(enum CodeForm form, size_t k) {
  return form == BYTES_32 ? k : k / 2;
}
INLINE size_t high_row_bytes(enum CodeForm form, size_t k) {
  return k * high_bits_per_code(form) / 8;
}

// Where weight row `row`'s codes begin, and where the row's byte b lies from there. The rows
// follow one another, or (`paired`: 4-bit codes in rows of whole 64-byte lines, as
// models/resident_weight.h's _paired_nibbles) rows 2p and 2p + 1 alternate line by line, so that
// a one-x-row pass, which reads two weight rows at once (pass_weights), reads one ascending
// stream instead of two 1 KiB or more apart, which moves more bytes per second
// (docs/PERFORMANCE.md, "Paired rows").
INLINE const uint8_t* code_row(const uint8_t* codes, size_t row, size_t row_bytes, int paired) {
  if (!paired) return codes + row * row_bytes;
  return codes + (row & ~(size_t)1) * row_bytes + (row & 1) * 64;
}
INLINE size_t code_byte(size_t b, int paired) {
  return paired ? (b & ~(size_t)63) * 2 + (b & 63) : b;
}
// The entry points take paired_codes: tools built against several revisions of this file test
// for it.
#define PLANAR_PAIRED_CODES 1
// ... and e2m1_codes (MXFP4).
#define PLANAR_E2M1_CODES 1

#if LANES == 16
// Sixteen elements' high bits, each moved to bit 4 and up of its byte: elements [first, first +
// 16) of a 32-element block whose high bits (`bits` per element) lie in the B = 4 * bits bytes at
// `block`, element e at byte e % B, bits * (e / B) up (model_files/planar_blocks.h).
INLINE __m128i high_bits16(const uint8_t* block, size_t first, size_t bits) {
  if (bits == 2) {
    // Elements first + j and first + 8 + j (j < 8) at byte j, at two shifts: one 8-byte load.
    const __m128i bytes = _mm_loadl_epi64((const __m128i*)block);
    const __m128i three = _mm_set1_epi8(3);
    const __m128i shifted = _mm_srl_epi16(bytes, _mm_cvtsi32_si128((int)(first / 4)));
    const __m128i low = _mm_and_si128(shifted, three);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(shifted, 2), three);
    // Fields of at most 2 bits: shifting 16-bit lanes by 4 moves none into the next byte.
    return _mm_slli_epi16(_mm_unpacklo_epi64(low, high), 4);
  }
  // One bit: element first + 4s + j (s, j < 4) at byte j, bit first / 4 + s.
  int32_t word;
  __builtin_memcpy(&word, block, 4);
  const __m128i bytes = _mm_set1_epi32(word);
  const __m128i bit = _mm_sll_epi16(_mm_setr_epi8(1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8),
                                    _mm_cvtsi32_si128((int)(first / 4)));
  const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(bytes, bit), bit);
  return _mm_and_si128(set, _mm_set1_epi8(0x10));
}

#endif

// Group g of a weight row's codes (`highs`: the row's high bits, for the forms with them), as
// f32 vectors of consecutive elements.
INLINE void group_codes(const uint8_t* codes, const uint8_t* highs, size_t g, enum CodeForm form,
                        vec out[MAX_VECTORS_PER_GROUP]) {
  if (form == BYTES_32) {
    const size_t vectors = vectors_per_group(form);
    for (size_t v = 0; v < vectors; ++v)
      out[v] = widen(load_codes(codes + (g * vectors + v) * LANES));
    return;
  }
#if LANES == 16
  const __m128i mask = _mm_set1_epi8(0x0F);
  if (form == NIBBLES_HIGH2_16_CENTRED) {
    // Groups of 16: group g is one half (low or high nibbles) of 32-element block g / 2.
    const size_t block = g / 2, half = g % 2;
    const __m128i packed = _mm_loadu_si128((const __m128i*)(codes + block * 16));
    __m128i nibbles = _mm_and_si128(half ? _mm_srli_epi16(packed, 4) : packed, mask);
    __m128i code = _mm_or_si128(nibbles, high_bits16(highs + block * 8, half * 16, 2));
    out[0] = widen(_mm_sub_epi8(code, _mm_set1_epi8((char)code_bias(form))));
    return;
  }
  const __m128i packed =
      _mm_loadu_si128((const __m128i*)(codes + code_byte(g * 16, pairs_rows(form))));
  __m128i low = _mm_and_si128(packed, mask);                      // elements 0..15
  __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);  // elements 16..31
  if (high_bits_per_code(form) == 1) {
    low = _mm_or_si128(low, high_bits16(highs + g * 4, 0, 1));
    high = _mm_or_si128(high, high_bits16(highs + g * 4, 16, 1));
  }
  const int bias = code_bias(form);
  if (bias != 0) {
    low = _mm_sub_epi8(low, _mm_set1_epi8((char)bias));
    high = _mm_sub_epi8(high, _mm_set1_epi8((char)bias));
  }
  out[0] = widen(low);
  out[1] = widen(high);
#else
  // 8 lanes: nibble_weights takes the nibble forms (group_weights).
  (void)highs;
#endif
}

// How a weight's scales and offsets are stored.
enum ScaleForm {
  SCALES_F32,
  SCALES_F16,
  SCALES_TWO_LEVEL,  // i8 per group, times an f16 per SUPER_GROUP elements
  SCALES_EXPANDED,   // f32, one row's F16, TWO_LEVEL or E8M0 values widened ahead
                     // (expand_row_factors)
  SCALES_E8M0,       // a byte per group, the exponent e of the scale 2^(e - 128) (E2M1 codes)
};

// scale * code (+ offset), each step rounded to f32, as the gguf package computes it. The
// formats with offsets have f16 scales (11 significant bits: Q4_1, Q5_1) or an f16 times a 6-bit
// integer (17: Q4_K, Q5_K), and codes of at most 5 bits, so scale * code has at most 22
// significant bits: it is exact in f32, and one fused multiply-add rounds exactly where the two
// steps would, one instruction less per vector where decode spends its time. Scales given as
// f32 (SCALES_F32) promise nothing of the kind and take the two steps.
INLINE vec dequantize(vec code, vec scale, vec offset, int has_offsets, enum ScaleForm form) {
  if (has_offsets && form != SCALES_F32) return vec_fmadd(scale, code, offset);
  const vec value = vec_mul(scale, code);
  return has_offsets ? vec_add(value, offset) : value;
}
#define SUPER_GROUP 256

// A weight's scale and offset planes (of the whole weight, or from one row on); the super
// planes only for SCALES_TWO_LEVEL, offsets only for formats with offsets.
struct Planes {
  const void* scales;
  const void* offsets;
  const uint16_t* super_scales;
  const uint16_t* super_offsets;
  const uint8_t* high_bits;  // the codes' bits above their nibble (forms with them)
};

INLINE size_t scale_bytes(enum ScaleForm form) {
  return form == SCALES_F32 || form == SCALES_EXPANDED ? 4 : form == SCALES_F16 ? 2 : 1;
}

// Value g of a scale or offset plane (groups of `group` elements): f32, f16 widened exactly, or
// an i8 times its super-block's f16 (both exact in f32, and so is their product).
INLINE float plane_value(const void* plane, const uint16_t* super, size_t g, size_t group,
                         enum ScaleForm form) {
  if (form == SCALES_F32 || form == SCALES_EXPANDED) return ((const float*)plane)[g];
  if (form == SCALES_F16) return _cvtsh_ss(((const uint16_t*)plane)[g]);
  if (form == SCALES_E8M0) {
    // (e - 1) << 23 is 2^(e - 128); below e = 2 the subnormal 0x00200000 << e.
    const uint32_t e = ((const uint8_t*)plane)[g];
    const uint32_t bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
    float scale;
    __builtin_memcpy(&scale, &bits, 4);
    return scale;
  }
  return _cvtsh_ss(super[g / (SUPER_GROUP / group)]) * (float)((const int8_t*)plane)[g];
}

// The planes from weight row `row` on, `groups` groups per row.
INLINE struct Planes planes_row(struct Planes p, size_t row, size_t groups, size_t group,
                                enum ScaleForm form, size_t high_bytes) {
  const size_t bytes = row * groups * scale_bytes(form);
  const size_t supers = row * groups / (SUPER_GROUP / group);
  struct Planes out = {(const char*)p.scales + bytes, (const char*)p.offsets + bytes,
                       p.super_scales, p.super_offsets, p.high_bits + row * high_bytes};
  if (form == SCALES_TWO_LEVEL) {
    out.super_scales = p.super_scales + supers;
    out.super_offsets = p.super_offsets + supers;
  }
  return out;
}

// Group g's scale and offset (the scale again where there is no offset) as vectors.
INLINE void group_factors(struct Planes p, size_t g, size_t group, enum ScaleForm form,
                          int has_offsets, vec* scale, vec* offset) {
  *scale = vec_broadcast(plane_value(p.scales, p.super_scales, g, group, form));
  *offset =
      has_offsets ? vec_broadcast(plane_value(p.offsets, p.super_offsets, g, group, form)) : *scale;
}

#if LANES == 16
// 4-bit codes take at most 16 values: a group's weights are read from a table of the values its
// codes can take, formed once per group (one multiply-add for 32 weights) and indexed by the
// nibbles themselves (vpermps reads an index's low 4 bits), instead of widening, converting and
// scaling every code. The table holds exactly the values dequantize gives, so the products are
// the same bits, in less time (docs/PERFORMANCE.md, "reads_table"). (A 32-entry table for the
// 5-bit forms, vpermt2ps, measured slower than converting.)
INLINE int reads_table(enum CodeForm form) {
  return form == NIBBLES_32 || form == NIBBLES_32_CENTRED || pairs_rows(form) ||
         form == NIBBLES_32_E2M1;
}

// Group g's 32 weights (two vectors) through its table.
INLINE void table_weights(const uint8_t* codes, size_t g, enum CodeForm form, vec scale, vec offset,
                          int has_offsets, enum ScaleForm scale_form, vec out[2]) {
  const vec codes_of =
      form == NIBBLES_32_E2M1
          ? _mm512_setr_ps(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
          : vec_add(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                    vec_broadcast((float)-code_bias(form)));
  const vec table = dequantize(codes_of, scale, offset, has_offsets, scale_form);
  // Byte j holds element j in bits 3:0 and element j + 16 in bits 7:4: as dwords, the low
  // nibble indexes directly, the high one after a shift.
  const __m512i packed = _mm512_cvtepu8_epi32(
      _mm_loadu_si128((const __m128i*)(codes + code_byte(g * 16, pairs_rows(form)))));
  out[0] = _mm512_permutexvar_ps(packed, table);
  out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(packed, 4), table);
}
#endif

// The centred forms with high bits (Q5_0, Q6_K), and with 8 lanes Q4_0's too (nibble_weights;
// 16 lanes read Q4_0 through its table), without f32 scales: a code u - bias (u the
// unsigned 5 or 6 bits) becomes an f32 by placing u in the bits under the exponent of 128
// (0x43000000 | u << 16 is 128 + u exactly), one byte permute per vector of codes, and
// scale * (u - bias) is then one fused multiply-add, scale * (128 + u) + minus, where minus =
// -(128 + bias) * scale. That rounds once, as today's scale * code does, provided minus is exact:
// scales have at most 18 significant bits (an f16 times an i8, or an f16) and 128 + bias (136,
// 144, 160) at most 5, so it is. (A zero code gives +0 where scale * code gave -0 for a negative
// scale: no sum of products differs, since the accumulators, from +0, are never -0.) Instead of
// widen, convert and multiply (three operations, two on the shuffle port's side) per 16 codes.
// E2M1 codes with 8 lanes take it too (u their value plus E2M1_BIAS): their scales are powers
// of two, so minus = -140 * scale is exact (below e = 249, where it would overflow: scales past
// 2^120 would put the weights themselves near f32's limit).
INLINE int biased_magic(enum CodeForm form, enum ScaleForm scale_form) {
  if (scale_form == SCALES_F32) return 0;
  if (form == NIBBLES_HIGH2_16_CENTRED || form == NIBBLES_HIGH1_32_CENTRED) return 1;
  return LANES == 8 && (form == NIBBLES_32_CENTRED || form == NIBBLES_32_CENTRED_PAIRED ||
                        form == NIBBLES_32_E2M1);
}
INLINE float magic_bias(enum CodeForm form) {
  return (float)(128 + code_bias(form));
}

#if LANES == 8
// 8 lanes: a group's codes become f32 weights with one byte shuffle per 8 (vpshufb), where
// widening them took three shuffles per 8 and a join of high bits per 16 (group_codes): the
// group's code bytes (nibble, with any high bits joined) sit in both 128-bit lanes, so that
// vpshufb, which picks within a lane, places bytes 8s + j (j < 4) in lane 0 and 8s + 4 + j in
// lane 1: the 8 consecutive elements of vector s. The centred forms place the code under 128's
// exponent (biased_magic); the others place it alone and convert it. The weights are the bits
// dequantize gives (docs/PERFORMANCE.md, "AVX2 nibble_weights").

// vpshufb's index for vector s of a lane-duplicated run of 16 codes: dword j takes code byte
// 8s + j (lane 0) or 8s + 4 + j (lane 1), as byte 2 under byte 3 from the lane's 0x43
// (exponent_bytes: lane 0's byte 4, lane 1's byte 0) for the magic form, else as byte 0 with
// the other bytes zero (an index byte with bit 7 set writes zero).
INLINE int code_dword(int code, int lane, int magic) {
  if (!magic) return code | (int)0x80808000u;
  return 0x8080 | code << 16 | (lane == 0 ? 4 : 0) << 24;
}
INLINE __m256i code_index(int s, int magic) {
  return _mm256_setr_epi32(code_dword(8 * s + 0, 0, magic), code_dword(8 * s + 1, 0, magic),
                           code_dword(8 * s + 2, 0, magic), code_dword(8 * s + 3, 0, magic),
                           code_dword(8 * s + 4, 1, magic), code_dword(8 * s + 5, 1, magic),
                           code_dword(8 * s + 6, 1, magic), code_dword(8 * s + 7, 1, magic));
}
// 0x43 (128's top byte) into the bytes the lanes' indices never pick for a code: lane 0's
// bytes 4-7 and lane 1's 0-3.
INLINE __m256i exponent_bytes(__m256i codes) {
  return _mm256_blend_epi32(codes, _mm256_set1_epi8(0x43), 0x12);
}

// Group g's weights (vectors_per_group vectors of consecutive elements), as group_weights.
INLINE void nibble_weights(const uint8_t* codes, struct Planes p, size_t g, enum CodeForm form,
                           enum ScaleForm scale_form, int has_offsets, vec scale, vec offset,
                           vec out[MAX_VECTORS_PER_GROUP]) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  // Runs of 16 codes, each in both lanes: the group's (Q6_K), or elements 16h + j.
  __m256i runs[2];
  size_t run_count = 2;
  if (form == NIBBLES_HIGH2_16_CENTRED) {
    // Group g is half g % 2 (low or high nibbles) of block g / 2; element j's two high bits at
    // bits 4h + 2 (j / 8) of byte j % 8 (model_files/planar_blocks.h), moved to bits 5:4 by a
    // shift per dword (32-bit shifts: fields moved across a byte boundary are masked off).
    const size_t block = g / 2, half = g % 2;
    const __m256i packed =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(codes + block * 16)));
    int64_t word;
    __builtin_memcpy(&word, p.high_bits + block * 8, 8);
    const __m256i bits = _mm256_set1_epi64x(word);
    __m256i low, high;
    if (half == 0) {
      low = _mm256_and_si256(packed, nibble);
      high = _mm256_sllv_epi32(bits, _mm256_setr_epi32(4, 4, 2, 2, 4, 4, 2, 2));
    } else {
      low = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
      high = _mm256_srlv_epi32(bits, _mm256_setr_epi32(0, 0, 2, 2, 0, 0, 2, 2));
    }
    runs[0] = _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
    run_count = 1;
  } else {
    const __m256i packed = _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i*)(codes + code_byte(g * 16, pairs_rows(form)))));
    runs[0] = _mm256_and_si256(packed, nibble);
    runs[1] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    if (form == NIBBLES_32_E2M1) {
      // Each nibble to its E2M1 value plus E2M1_BIAS: one byte shuffle per 16 codes.
      const __m256i values = _mm256_broadcastsi128_si256(e2m1_biased_values());
      runs[0] = _mm256_shuffle_epi8(values, runs[0]);
      runs[1] = _mm256_shuffle_epi8(values, runs[1]);
    }
    if (high_bits_per_code(form) == 1) {
      // Element e's bit is bit e / 4 of byte e % 4 (high_bits16).
      int32_t word;
      __builtin_memcpy(&word, p.high_bits + g * 4, 4);
      const __m256i bits = _mm256_set1_epi32(word);
      const __m256i sixteen = _mm256_set1_epi8(0x10);
      const __m256i low_bit = _mm256_setr_epi8(1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 1, 1,
                                               1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8);
      const __m256i high_bit = _mm256_slli_epi16(low_bit, 4);
      runs[0] = _mm256_or_si256(
          runs[0],
          _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bits, low_bit), low_bit), sixteen));
      runs[1] = _mm256_or_si256(
          runs[1],
          _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bits, high_bit), high_bit), sixteen));
    }
  }
  if (biased_magic(form, scale_form)) {
    const vec minus = scale_form == SCALES_EXPANDED
                          ? vec_broadcast(((const float*)p.offsets)[g])
                          : vec_mul(scale, vec_broadcast(-magic_bias(form)));
    for (size_t r = 0; r < run_count; ++r) {
      const __m256i run = exponent_bytes(runs[r]);
      for (int s = 0; s < 2; ++s) {
        const __m256i bits = _mm256_shuffle_epi8(run, code_index(s, 1));
        out[2 * r + s] = vec_fmadd(scale, _mm256_castsi256_ps(bits), minus);
      }
    }
    return;
  }
  const vec bias = vec_broadcast((float)code_bias(form));
  for (size_t r = 0; r < run_count; ++r) {
    for (int s = 0; s < 2; ++s) {
      vec code = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(runs[r], code_index(s, 0)));
      if (code_bias(form) != 0) code = vec_sub(code, bias);  // exact: small integers
      out[2 * r + s] = dequantize(code, scale, offset, has_offsets, scale_form);
    }
  }
}
#endif

// Most columns of a one-x-row Q6_K product taken in quad order (quad_order): its x row is
// reordered into a copy on the stack (32 KiB).
#define MAX_QUAD_K 8192
// Codes whose one-x-row passes may take quad order: Q6_K's, with 16-lane vectors. A constant
// expression, so that other passes set aside no room for x.
#define QUAD_FORM(FORM) (LANES == 16 && (FORM) == NIBBLES_HIGH2_16_CENTRED)

// Whether a one-x-row pass takes quad order (quad_weights), given the weight's scale form or, in
// the pass, the expanded one: Q6_K rows of at most MAX_QUAD_K columns, whose factors weight_rows
// always expands (below MAX_ROW_GROUPS) unless they are f32.
INLINE int quad_order(enum CodeForm form, enum ScaleForm scale_form, size_t k) {
  return QUAD_FORM(form) && scale_form != SCALES_F32 && k <= MAX_QUAD_K;
}

#if LANES == 16
// Codes with high bits (Q5_0, Q5_1, Q5_K, Q6_K) 128 elements (four 32-element blocks) at a
// time: the blocks' nibbles (one 64-byte load) and high bits joined with whole-vector
// operations, instead of a 128-bit join per 16 elements (~14 operations per 16 weights): the
// same bits, faster on one row and on several (docs/PERFORMANCE.md, "CHUNK_ELEMENTS").
#define CHUNK_ELEMENTS 128
#define CHUNK_VECTORS (CHUNK_ELEMENTS / LANES)
INLINE int reads_chunks(enum CodeForm form) {
  return high_bits_per_code(form) != 0;
}

// A chunk's codes as i8 with the form's bias taken off: bytes 16b + j of `first` hold element
// j of block b, of `second` element 16 + j.
INLINE void chunk_codes(const uint8_t* codes, const uint8_t* highs, size_t c, enum CodeForm form,
                        int unbiased, __m512i* first, __m512i* second) {
  const __m512i packed = _mm512_loadu_si512((const void*)(codes + c * 64));
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i low = _mm512_and_si512(packed, nibble);
  __m512i high = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
  if (high_bits_per_code(form) == 2) {
    // Block b's 8 high-bit bytes twice in 128-bit lane b: byte 16b + j holds the fields of
    // element j % 8 + 8 (j / 8) at bits 2 (j / 8) and of element 16 + that at bits 4 + 2 (j / 8)
    // (model_files/planar_blocks.h: byte j has elements j, j + 8, j + 16 and j + 24 at bits 0,
    // 2, 4 and 6). Bytes j, j + 1 share j / 8, so 16-bit shifts move each field to bits 5:4.
    const __m512i bits = _mm512_permutexvar_epi64(
        _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3),
        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(highs + c * 32))));
    const __m512i top = _mm512_set1_epi8(0x30);
    const __m512i low_shift = _mm512_set4_epi32(0x00020002, 0x00020002, 0x00040004, 0x00040004);
    const __m512i high_shift = _mm512_set4_epi32(0x00020002, 0x00020002, 0, 0);
    low = _mm512_or_si512(low, _mm512_and_si512(_mm512_sllv_epi16(bits, low_shift), top));
    high = _mm512_or_si512(high, _mm512_and_si512(_mm512_srlv_epi16(bits, high_shift), top));
  } else {
    // Block b's 4 high-bit bytes in each dword of 128-bit lane b: element e's bit is bit e / 4
    // of byte e % 4, so byte 16b + j (= 4m + r) tests bit m (elements j) or 4 + m (16 + j).
    const __m512i bits = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
        _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(highs + c * 16))));
    const __m512i low_bit = _mm512_set4_epi32(0x08080808, 0x04040404, 0x02020202, 0x01010101);
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    low = _mm512_mask_add_epi8(low, _mm512_test_epi8_mask(bits, low_bit), low, sixteen);
    high = _mm512_mask_add_epi8(high, _mm512_test_epi8_mask(bits, _mm512_slli_epi16(low_bit, 4)),
                                high, sixteen);
  }
  const int bias = code_bias(form);
  if (bias != 0 && !unbiased) {
    low = _mm512_sub_epi8(low, _mm512_set1_epi8((char)bias));
    high = _mm512_sub_epi8(high, _mm512_set1_epi8((char)bias));
  }
  *first = low, *second = high;
}

// into with the bytes of table that index picks, where mask is set: a merge-masked vpermb (VBMI:
// from all 64 bytes), else vpshufb (within each 128-bit lane). In assembly: written as the
// intrinsic, clang turns the constant shuffle into two-table permutes (vpermt2b, or vpermb and
// vpermt2b), which take more cycles here (docs/PERFORMANCE.md, "permute_bytes_into").
INLINE __m512i permute_bytes_into(__m512i into, __mmask64 mask, __m512i index, __m512i table) {
#if defined(__AVX512VBMI__)
  __asm__("vpermb %[table], %[index], %[into] %{%[mask]%}"
          : [into] "+v"(into)
          : [table] "v"(table), [index] "v"(index), [mask] "Yk"(mask));
#else
  __asm__("vpshufb %[index], %[table], %[into] %{%[mask]%}"
          : [into] "+v"(into)
          : [table] "v"(table), [index] "v"(index), [mask] "Yk"(mask));
#endif
  return into;
}

INLINE void magic_weights(struct Planes p, size_t c, enum CodeForm form, enum ScaleForm scale_form,
                          __m512i first, __m512i second, vec out[CHUNK_VECTORS]) {
  const size_t vectors = vectors_per_group(form), group = vectors * LANES;
#if !defined(__AVX512VBMI__)
  // Through memory, so that each block's 16 codes reach all four 128-bit lanes with a
  // broadcast load, for vpshufb to pick from within a lane.
  int8_t bytes[2][64] __attribute__((aligned(64)));
  _mm512_store_si512((void*)bytes[0], first);
  _mm512_store_si512((void*)bytes[1], second);
  __asm__ volatile("" : : : "memory");
#endif
  const __m512i exponent = _mm512_set1_epi32(0x43000000);
  // Unrolled by hand: the assembly in permute_bytes_into keeps clang from unrolling it.
#pragma unroll
  for (size_t v = 0; v < CHUNK_VECTORS; ++v) {
    const size_t g = (c * CHUNK_VECTORS + v) / vectors;
    const float s = plane_value(p.scales, p.super_scales, g, group, scale_form);
    const vec scale = vec_broadcast(s);
    const vec minus = vec_broadcast(scale_form == SCALES_EXPANDED ? ((const float*)p.offsets)[g]
                                                                  : s * -magic_bias(form));
    // Byte 2 of dword j of the vector from element j of block v / 2 (bytes 16 (v / 2) + j of
    // first, v even, or second); the other bytes keep the exponent's.
#if defined(__AVX512VBMI__)
    const int b = 16 * (int)(v / 2);
    const __m512i table = v % 2 ? second : first;
#else
    const int b = 0;  // byte j of the lane (within a lane, vpshufb reads the low 4 bits)
    const __m512i table =
        _mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)(bytes[v % 2] + 16 * (v / 2))));
#endif
    const __m512i index = _mm512_setr_epi32(
        b << 16, (b + 1) << 16, (b + 2) << 16, (b + 3) << 16, (b + 4) << 16, (b + 5) << 16,
        (b + 6) << 16, (b + 7) << 16, (b + 8) << 16, (b + 9) << 16, (b + 10) << 16, (b + 11) << 16,
        (b + 12) << 16, (b + 13) << 16, (b + 14) << 16, (b + 15) << 16);
    const __m512i bits = permute_bytes_into(exponent, 0x4444444444444444ull, index, table);
    out[v] = vec_fmadd(scale, _mm512_castsi512_ps(bits), minus);
  }
}

// Q6_K's one-x-row chunks in quad order: vector 4h + m holds elements 32b + 16h + 4m + i of the
// chunk at lane 4b + i (b, i < 4), so a vector's lanes come from four groups (2b + h), and half h's
// four vectors share one scale vector and one minus vector, permuted from the chunk's eight scales.
// The x row is read in the same order (quad_order_x, once per call). Consecutive order takes two
// broadcast loads per 16 weights (the group's scale and minus) beside the x load, and loads, not
// arithmetic, bounded it. The weights are the same; only the order of the row's sum changes.
// Q6_K products got faster in cache and from memory, and so did a 1B model's decode step
// (docs/PERFORMANCE.md, "Q6_K quad order").

// Chunk c in quad order (quad_order), dequantized as magic_weights does.
INLINE void quad_weights(const uint8_t* codes, struct Planes p, size_t c, enum CodeForm form,
                         vec out[CHUNK_VECTORS]) {
  __m512i first, second;
  chunk_codes(codes, p.high_bits, c, form, 1, &first, &second);
  const __m512 scales =
      _mm512_castps256_ps512(_mm256_loadu_ps((const float*)p.scales + c * CHUNK_VECTORS));
  const __m512i exponent = _mm512_set1_epi32(0x43000000);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const vec scale =
        _mm512_permutexvar_ps(_mm512_setr_epi32(h, h, h, h, 2 + h, 2 + h, 2 + h, 2 + h, 4 + h,
                                                4 + h, 4 + h, 4 + h, 6 + h, 6 + h, 6 + h, 6 + h),
                              scales);
    const vec minus = vec_mul(scale, vec_broadcast(-magic_bias(form)));
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      // Byte 2 of dword 4b + i from byte 16b + 4m + i of the half's codes.
      const int b = 4 * m;
      const __m512i index = _mm512_setr_epi32(
          b << 16, (b + 1) << 16, (b + 2) << 16, (b + 3) << 16, (b + 16) << 16, (b + 17) << 16,
          (b + 18) << 16, (b + 19) << 16, (b + 32) << 16, (b + 33) << 16, (b + 34) << 16,
          (b + 35) << 16, (b + 48) << 16, (b + 49) << 16, (b + 50) << 16, (b + 51) << 16);
      const __m512i bits =
          permute_bytes_into(exponent, 0x4444444444444444ull, index, h ? second : first);
      out[4 * h + m] = vec_fmadd(scale, _mm512_castsi512_ps(bits), minus);
    }
  }
}

// x's chunks in quad order (quad_order) into out, the columns past the last chunk as they are.
INLINE void quad_order_x(const float* x, size_t k, float* out) {
  size_t c = 0;
  for (; c + CHUNK_ELEMENTS <= k; c += CHUNK_ELEMENTS) {
    // Vector 4h + m's 128-bit lane b is lane m of input vector 2b + h: a 4x4 transpose of
    // 128-bit lanes per half.
    for (int h = 0; h < 2; ++h) {
      const __m512 v0 = vec_load(x + c + (0 + h) * 16), v1 = vec_load(x + c + (2 + h) * 16);
      const __m512 v2 = vec_load(x + c + (4 + h) * 16), v3 = vec_load(x + c + (6 + h) * 16);
      const __m512 t0 = _mm512_shuffle_f32x4(v0, v1, 0x44);  // v0.0 v0.1 v1.0 v1.1
      const __m512 t1 = _mm512_shuffle_f32x4(v0, v1, 0xee);  // v0.2 v0.3 v1.2 v1.3
      const __m512 t2 = _mm512_shuffle_f32x4(v2, v3, 0x44);
      const __m512 t3 = _mm512_shuffle_f32x4(v2, v3, 0xee);
      vec_store(out + c + (4 * h + 0) * 16, _mm512_shuffle_f32x4(t0, t2, 0x88));  // lanes 0
      vec_store(out + c + (4 * h + 1) * 16, _mm512_shuffle_f32x4(t0, t2, 0xdd));  // lanes 1
      vec_store(out + c + (4 * h + 2) * 16, _mm512_shuffle_f32x4(t1, t3, 0x88));
      vec_store(out + c + (4 * h + 3) * 16, _mm512_shuffle_f32x4(t1, t3, 0xdd));
    }
  }
  for (; c < k; ++c) out[c] = x[c];
}

// Chunk c of a weight row as f32 vectors of consecutive elements, dequantized as group_weights
// does.
INLINE void chunk_weights(const uint8_t* codes, struct Planes p, size_t c, enum CodeForm form,
                          enum ScaleForm scale_form, int has_offsets, vec out[CHUNK_VECTORS]) {
  __m512i first, second;
  if (biased_magic(form, scale_form)) {
    chunk_codes(codes, p.high_bits, c, form, 1, &first, &second);
    magic_weights(p, c, form, scale_form, first, second, out);
    return;
  }
  chunk_codes(codes, p.high_bits, c, form, 0, &first, &second);
  // Through memory, so that each vector widens from a load (one shuffle) rather than an
  // extract and a widen (two, on the one port that shuffles).
  int8_t bytes[2][64] __attribute__((aligned(64)));
  _mm512_store_si512((void*)bytes[0], first);
  _mm512_store_si512((void*)bytes[1], second);
  __asm__ volatile("" : : : "memory");
  const size_t vectors = vectors_per_group(form);
  for (size_t v = 0; v < CHUNK_VECTORS; ++v) {
    vec scale, offset;
    group_factors(p, (c * CHUNK_VECTORS + v) / vectors, vectors * LANES, scale_form, has_offsets,
                  &scale, &offset);
    const vec code = widen(_mm_load_si128((const __m128i*)(bytes[v % 2] + (v / 2) * 16)));
    out[v] = dequantize(code, scale, offset, has_offsets, scale_form);
  }
}
#else
INLINE void quad_order_x(const float* x, size_t k, float* out) {
  (void)x, (void)k, (void)out;
}
#endif

// Group g of a weight row (planes p from that row on), dequantized: f32 vectors of consecutive
// elements.
INLINE void group_weights(const uint8_t* codes, struct Planes p, size_t g, enum CodeForm form,
                          enum ScaleForm scale_form, int has_offsets,
                          vec out[MAX_VECTORS_PER_GROUP]) {
  const size_t vectors = vectors_per_group(form);
  vec scale, offset;
  group_factors(p, g, vectors * LANES, scale_form, has_offsets, &scale, &offset);
#if LANES == 16
  if (reads_table(form)) {
    table_weights(codes, g, form, scale, offset, has_offsets, scale_form, out);
    return;
  }
#else
  if (form != BYTES_32) {
    nibble_weights(codes, p, g, form, scale_form, has_offsets, scale, offset, out);
    return;
  }
#endif
  vec code[MAX_VECTORS_PER_GROUP];
  group_codes(codes, p.high_bits, g, form, code);
  for (size_t v = 0; v < vectors; ++v) {
    out[v] = dequantize(code[v], scale, offset, has_offsets, scale_form);
  }
}

// Most weight rows a pass takes at a time (pass_weights).
#define MAX_WEIGHT_ROWS 4

// Group g of `weights` weight rows times one activation row, each row into its own accumulators
// from `first` on (one per vector): the x vectors are loaded once for all the rows.
INLINE void group_times_one(const uint8_t* const* codes, const struct Planes* p, size_t weights,
                            int has_offsets, enum ScaleForm scale_form, enum CodeForm form,
                            const float* x, size_t g, size_t first,
                            vec acc[MAX_WEIGHT_ROWS][MAX_VECTORS_PER_GROUP]) {
  const size_t vectors = vectors_per_group(form);
  vec w[MAX_WEIGHT_ROWS][MAX_VECTORS_PER_GROUP];
  for (size_t i = 0; i < weights; ++i)
    group_weights(codes[i], p[i], g, form, scale_form, has_offsets, w[i]);
  for (size_t v = 0; v < vectors; ++v) {
    const vec xv = vec_load(x + (g * vectors + v) * LANES);
    for (size_t i = 0; i < weights; ++i)
      acc[i][first + v] = vec_fmadd(w[i][v], xv, acc[i][first + v]);
  }
}

#if LANES == 16
// A one-x-row pass's chunks (reads_chunks) of one weight row into acc[u % 4] (vector u),
// consecutive or in quad order (quad_order); returns the groups they span.
INLINE size_t chunks_times_one(const uint8_t* codes, struct Planes p, enum CodeForm form,
                               enum ScaleForm scale_form, int has_offsets, const float* x,
                               size_t groups, size_t ahead, int quad, vec acc[4]) {
  const size_t vectors = vectors_per_group(form), k = groups * vectors * LANES;
  const size_t codes_ahead = ahead * code_row_bytes(form, k);
  const size_t highs_ahead = ahead * high_row_bytes(form, k);
  const size_t chunk_groups = CHUNK_VECTORS / vectors;
  size_t g = 0;
  for (; g + chunk_groups <= groups; g += chunk_groups) {
    vec w[CHUNK_VECTORS];
    const size_t c = g / chunk_groups;
    stream_prefetch(codes + code_byte(c * 64, pairs_rows(form)) + codes_ahead);
    stream_prefetch(p.high_bits + c * 16 * high_bits_per_code(form) + highs_ahead);
    if (quad) {
      quad_weights(codes, p, c, form, w);
    } else {
      chunk_weights(codes, p, c, form, scale_form, has_offsets, w);
    }
    for (size_t v = 0; v < CHUNK_VECTORS; ++v) {
      acc[v % 4] = vec_fmadd(w[v], vec_load(x + g * vectors * LANES + v * LANES), acc[v % 4]);
    }
  }
  return g;
}
#endif

// `weights` weight rows times one activation row, into out[i]: four independent accumulators per
// weight row (a chain of dependent FMAs would wait on their latency), so groups of fewer than four
// vectors go two or four at a time; out[i] holds their sum, its lanes left for the caller to sum
// with other rows' (vec_sums). Each row's sum is the same
// whichever rows it goes with; two rows together share their x loads and overlap one row's
// setup and final sum with the other's products, faster than one at a time (pass_weights;
// docs/PERFORMANCE.md, "Two weight rows per x row"). The codes (and high bits) of the rows `ahead`
// rows on are prefetched as these are read (stream_prefetch).
INLINE void rows_times_one(const uint8_t* const* codes, const struct Planes* p, size_t weights,
                           int has_offsets, enum ScaleForm scale_form, enum CodeForm form,
                           const float* x, size_t groups, size_t ahead, vec* out) {
  const size_t vectors = vectors_per_group(form);
  const size_t step = MAX_VECTORS_PER_GROUP / vectors;
  const size_t k = groups * vectors * LANES;
  const size_t codes_ahead = ahead * code_row_bytes(form, k);
  vec acc[MAX_WEIGHT_ROWS][MAX_VECTORS_PER_GROUP];
  for (size_t i = 0; i < weights; ++i) {
    for (size_t u = 0; u < MAX_VECTORS_PER_GROUP; ++u) acc[i][u] = vec_zero();
  }
  size_t g = 0;
#if LANES == 16
  if (reads_chunks(form) && weights == 1) {
    // Vector u of the row into acc[u % 4], as the loop below, which takes more weight rows (in
    // consecutive order the same values: pass_weights gives these forms one row). Each order's
    // loop apart: clang keeps a test of k inside one loop.
    if (quad_order(form, scale_form, k)) {
      g = chunks_times_one(codes[0], p[0], form, scale_form, has_offsets, x, groups, ahead, 1,
                           acc[0]);
    } else {
      g = chunks_times_one(codes[0], p[0], form, scale_form, has_offsets, x, groups, ahead, 0,
                           acc[0]);
    }
  }
#endif
  for (; g + step <= groups; g += step) {
    // Each row's codes a line ahead at each line it starts (stream_prefetch).
    const size_t group_bytes = code_row_bytes(form, vectors * LANES);
    if (((g * group_bytes) & 63) == 0) {
      for (size_t i = 0; i < weights; ++i) {
        stream_prefetch(codes[i] + code_byte(g * group_bytes, pairs_rows(form)) + codes_ahead);
      }
    }
    for (size_t u = 0; u < step; ++u) {
      group_times_one(codes, p, weights, has_offsets, scale_form, form, x, g + u, u * vectors, acc);
    }
  }
  for (; g < groups; ++g) {
    group_times_one(codes, p, weights, has_offsets, scale_form, form, x, g, 0, acc);
  }
  for (size_t i = 0; i < weights; ++i) {
    out[i] = vec_add(vec_add(acc[i][0], acc[i][1]), vec_add(acc[i][2], acc[i][3]));
  }
}

// `rows` activation rows (x [rows, k]) times `weights` weight rows (codes[i], planes p[i]), into
// out[t * out_stride + i]: each dequantized vector feeds one FMA per row, so the rows' chains
// interleave. One accumulator per output: with few rows its chain of dependent FMAs, not the
// core's throughput, bounds a weight row alone, so two or four weight rows go together (their
// sums are those of each alone).
INLINE void rows_times_many(const uint8_t* const* codes, const struct Planes* p, size_t weights,
                            int has_offsets, enum ScaleForm scale_form, enum CodeForm form,
                            const float* x, size_t k, size_t rows, size_t groups, float* out,
                            size_t out_stride) {
  const size_t vectors = vectors_per_group(form);
  vec acc[MAX_WEIGHT_ROWS][MAX_ACTIVATION_ROWS];
  for (size_t i = 0; i < weights; ++i) {
    for (size_t t = 0; t < rows; ++t) acc[i][t] = vec_zero();
  }
  size_t g = 0;
#if LANES == 16
  if (reads_chunks(form)) {
    const size_t chunk_groups = CHUNK_VECTORS / vectors;
    for (; g + chunk_groups <= groups; g += chunk_groups) {
      for (size_t i = 0; i < weights; ++i) {
        vec w[CHUNK_VECTORS];
        chunk_weights(codes[i], p[i], g / chunk_groups, form, scale_form, has_offsets, w);
        for (size_t v = 0; v < CHUNK_VECTORS; ++v) {
          const size_t at = g * vectors * LANES + v * LANES;
          for (size_t t = 0; t < rows; ++t)
            acc[i][t] = vec_fmadd(w[v], vec_load(x + t * k + at), acc[i][t]);
        }
      }
    }
  }
#endif
  for (; g < groups; ++g) {
    vec w[MAX_WEIGHT_ROWS][MAX_VECTORS_PER_GROUP];
    for (size_t i = 0; i < weights; ++i) {
      group_weights(codes[i], p[i], g, form, scale_form, has_offsets, w[i]);
    }
    for (size_t v = 0; v < vectors; ++v) {
      const size_t at = (g * vectors + v) * LANES;
      for (size_t t = 0; t < rows; ++t) {
        const vec xt = vec_load(x + t * k + at);
        for (size_t i = 0; i < weights; ++i) acc[i][t] = vec_fmadd(w[i][v], xt, acc[i][t]);
      }
    }
  }
  for (size_t i = 0; i < weights; ++i) {
    for (size_t t = 0; t < rows; ++t) out[t * out_stride + i] = vec_sum(acc[i][t]);
  }
}

// Planes of weight row `row` into the cache; its codes and high bits only when the pass does
// not stream them itself (streams_codes: one x row, stream_prefetch).
INLINE void prefetch_row(const uint8_t* codes, struct Planes p, int has_offsets,
                         enum ScaleForm scale_form, enum CodeForm form, size_t row, size_t k,
                         int streams_codes) {
  const size_t row_bytes = code_row_bytes(form, k), high_bytes = high_row_bytes(form, k);
  const size_t group = vectors_per_group(form) * LANES, groups = k / group;
  const struct Planes r = planes_row(p, row, groups, group, scale_form, high_bytes);
  if (!streams_codes) {
    const uint8_t* c = code_row(codes, row, row_bytes, pairs_rows(form));
    for (size_t b = 0; b < row_bytes; b += 64) {
      _mm_prefetch((const char*)(c + code_byte(b, pairs_rows(form))), _MM_HINT_T0);
    }
    for (size_t b = 0; b < high_bytes; b += 64) {
      _mm_prefetch((const char*)r.high_bits + b, _MM_HINT_T0);
    }
  }
  const size_t plane_bytes = groups * scale_bytes(scale_form);
  for (size_t b = 0; b < plane_bytes; b += 64) {
    _mm_prefetch((const char*)r.scales + b, _MM_HINT_T0);
    if (has_offsets) _mm_prefetch((const char*)r.offsets + b, _MM_HINT_T0);
  }
  // A row's super factors (2 bytes per 256 elements) share lines with the next rows'.
  if (scale_form == SCALES_TWO_LEVEL) {
    _mm_prefetch((const char*)r.super_scales, _MM_HINT_T0);
    if (has_offsets) _mm_prefetch((const char*)r.super_offsets, _MM_HINT_T0);
  }
}

// Most groups the factors of the weight rows a pass takes at a time are expanded for
// (expand_row_factors): 8 KiB of stack per plane; longer rows read their planes as they are.
#define MAX_ROW_GROUPS 2048
// Quad order reads expanded scales (quad_order): its rows' groups must fit.
_Static_assert(MAX_QUAD_K / 16 <= MAX_ROW_GROUPS, "quad order needs its rows' factors expanded");

// One row's scale or offset plane (`groups` groups of `group`) as f32 into out: f16 values
// widened, or two-level ones multiplied out, 8 at a time (the same values plane_value gives one
// by one: per group a scalar conversion and multiply cost as much as the group's 32 weights).
INLINE void expand_row_factors(const void* plane, const uint16_t* super, size_t groups,
                               size_t group, enum ScaleForm form, float* out) {
  size_t g = 0;
#if LANES == 16
  // 16 at a time: a row's expansion costs as much as a fifth of its products otherwise (Q6_K).
  if (form == SCALES_F16) {
    for (; g + 16 <= groups; g += 16) {
      _mm512_storeu_ps(
          out + g,
          _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)((const uint16_t*)plane + g))));
    }
  } else if (form == SCALES_TWO_LEVEL) {
    const size_t per_super = SUPER_GROUP / group;  // 8 or 16
    for (; g + 16 <= groups; g += 16) {
      // The 16 groups' super factors: one (per_super 16) or two (8), each widened exactly.
      int32_t supers = super[g / per_super];
      if (per_super == 8) __builtin_memcpy(&supers, super + g / 8, 4);
      const __m128 two = _mm_cvtph_ps(_mm_cvtsi32_si128(supers));
      const __m512 d = _mm512_permutexvar_ps(
          per_super == 16 ? _mm512_setzero_si512()
                          : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
          _mm512_castps128_ps512(two));
      const __m128i codes = _mm_loadu_si128((const __m128i*)((const int8_t*)plane + g));
      _mm512_storeu_ps(out + g, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes))));
    }
  } else if (form == SCALES_E8M0) {
    for (; g + 16 <= groups; g += 16) {
      const __m512i e =
          _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)((const uint8_t*)plane + g)));
      const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
      const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
      const __mmask16 low = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
      _mm512_storeu_ps(out + g, _mm512_castsi512_ps(_mm512_mask_blend_epi32(low, normal, tiny)));
    }
  }
#endif
  if (form == SCALES_F16) {
    for (; g + 8 <= groups; g += 8) {
      _mm256_storeu_ps(
          out + g, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)plane + g))));
    }
  } else if (form == SCALES_TWO_LEVEL) {
    const size_t per_super = SUPER_GROUP / group;  // 8 or 16: a multiple of 8 groups
    for (; g + 8 <= groups; g += 8) {
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(super[g / per_super]));
      const __m128i codes = _mm_loadl_epi64((const __m128i*)((const int8_t*)plane + g));
      _mm256_storeu_ps(out + g, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes))));
    }
  } else if (form == SCALES_E8M0) {
    for (; g + 8 <= groups; g += 8) {
      const __m256i e =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)((const uint8_t*)plane + g)));
      const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
      const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
      const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
      _mm256_storeu_ps(out + g, _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, low)));
    }
  }
  for (; g < groups; ++g) out[g] = plane_value(plane, super, g, group, form);
}

// Whether a row's offsets are expanded: its offsets, or for the forms that take magic_weights
// their minus values.
INLINE int expands_offsets(enum CodeForm form, int has_offsets) {
  return has_offsets || biased_magic(form, SCALES_EXPANDED);
}
// minus (magic_weights) of each of a row's expanded scales.
INLINE void magic_minus(const float* scales, size_t groups, enum CodeForm form, float* out) {
  const vec factor = vec_broadcast(-magic_bias(form));
  size_t g = 0;
  for (; g + LANES <= groups; g += LANES) vec_store(out + g, vec_mul(vec_load(scales + g), factor));
  for (; g < groups; ++g) out[g] = scales[g] * -magic_bias(form);
}

// Weight rows a pass of `rows` activation rows takes at a time (see rows_times_many), as measured
// on one thread (docs/PERFORMANCE.md, "pass_weights"): Q4_K's two and three x rows ran faster with
// four weight rows than with one, four x rows with two (four were slightly slower there). More
// weight rows per pass break the chain of dependent FMAs one accumulator per output makes. One x
// row: two weight rows of the table-read forms (rows_times_one, four accumulators each; through
// rows_times_many's one accumulator per row a 1B Q4_K_M model's decode slowed), prefetched twice
// as far ahead so that streaming from memory keeps up: SmolLM2's decode gained, a 1B model's
// stayed within noise.
INLINE size_t pass_weights(size_t rows, enum CodeForm form) {
#if LANES == 16
  // The chunked forms' decoding, not the chains, bounds them, and two weight rows' vectors spill
  // registers: Q6_K's two x rows gain from two weight rows, three and four lose
  // (docs/PERFORMANCE.md, "pass_weights").
  if (reads_chunks(form)) return rows == 2 ? 2 : 1;
  // One x row: two table-read weight rows share each x load (rows_times_one); Q8_0's widening
  // gained nothing from it (one thread, 1536x576 and 2048x2048).
  if (rows == 1) return reads_table(form) ? 2 : 1;
#endif
  (void)form;
  if (rows == 1) return 1;
  return rows <= 3 ? 4 : rows == 4 ? 2 : 1;
}

// Weight rows [row, row + weights) times `rows` rows of x into y: their planes prefetched
// `ahead` rows on, their factors expanded (where they fit), then their products.
INLINE void weight_rows(const uint8_t* codes, struct Planes p, const float* x, float* y, size_t n,
                        size_t k, size_t row, size_t weights, size_t ahead, size_t rows,
                        enum CodeForm form, int has_offsets, enum ScaleForm scale_form,
                        vec* lanes) {
  const size_t group = vectors_per_group(form) * LANES;
  const size_t groups = k / group;
  const size_t row_bytes = code_row_bytes(form, k);
  for (size_t i = 0; i < weights; ++i) {
    if (row + i + ahead < n)
      prefetch_row(codes, p, has_offsets, scale_form, form, row + i + ahead, k, rows == 1);
  }
  const uint8_t* c[MAX_WEIGHT_ROWS];
  struct Planes r[MAX_WEIGHT_ROWS];
  for (size_t i = 0; i < weights; ++i) {
    c[i] = code_row(codes, row + i, row_bytes, pairs_rows(form));
    r[i] = planes_row(p, row + i, groups, group, scale_form, high_row_bytes(form, k));
  }
  // Quad order forms its minus values from the scales as it goes.
  const int offsets_expanded =
      expands_offsets(form, has_offsets) && !(rows == 1 && quad_order(form, scale_form, k));
  if (scale_form != SCALES_F32 && weights * groups <= MAX_ROW_GROUPS) {
    float scales[MAX_ROW_GROUPS], offsets[MAX_ROW_GROUPS];
    for (size_t i = 0; i < weights; ++i) {
      float* s = scales + i * groups;
      float* o = offsets + (offsets_expanded ? i * groups : 0);
      expand_row_factors(r[i].scales, r[i].super_scales, groups, group, scale_form, s);
      if (has_offsets)
        expand_row_factors(r[i].offsets, r[i].super_offsets, groups, group, scale_form, o);
      else if (offsets_expanded)
        magic_minus(s, groups, form, o);
      r[i].scales = s, r[i].offsets = o;
    }
    if (rows == 1) {
      rows_times_one(c, r, weights, has_offsets, SCALES_EXPANDED, form, x, groups, ahead, lanes);
    } else {
      rows_times_many(c, r, weights, has_offsets, SCALES_EXPANDED, form, x, k, rows, groups,
                      y + row, n);
    }
  } else if (rows == 1) {
    rows_times_one(c, r, weights, has_offsets, scale_form, form, x, groups, ahead, lanes);
  } else {
    rows_times_many(c, r, weights, has_offsets, scale_form, form, x, k, rows, groups, y + row, n);
  }
}

// How many weight rows ahead a pass prefetches: PREFETCH_BYTES, or for one x row as many passes
// ahead as a row alone would be rows ahead (the two rows of a pass are two streams: prefetched
// PREFETCH_BYTES ahead they streamed slower than one row, twice as far faster;
// docs/PERFORMANCE.md, "prefetch_rows").
INLINE size_t prefetch_rows(size_t rows, size_t weights, size_t row_bytes, int paired) {
  const size_t ahead = (PREFETCH_BYTES + row_bytes - 1) / row_bytes;
  const size_t rows_ahead = rows == 1 ? weights * ahead : ahead;
  // A one-x-row pass prefetches its rows' lines at the same offset that many bytes on: a whole
  // number of pairs where the rows go in pairs.
  return paired ? rows_ahead + rows_ahead % 2 : rows_ahead;
}

// One x row's sums of the `held` weight rows before `end` in y, from their lanes
// (rows_times_one), once LANES rows are held or at the workgroup's `last` rows; returns how many
// are still held. Summed LANES rows at a time (vec_sums: the same bits), the end of each weight
// row's product costs ~3 vector operations instead of a chain of ~9, which was a visible part of
// a short row's time in a profile; the products and a 1B model's decode got a little faster
// (docs/PERFORMANCE.md, "sum_held_rows"). (The 16-bit float product's rows gained nothing from
// it: bandwidth bounds them.) A one-row pass takes 1 or 2 weight rows
// (pass_weights), which divide LANES, so `held` reaches LANES exactly and never passes it.
INLINE size_t sum_held_rows(vec lanes[LANES], size_t held, float* end, int last) {
  if (held == LANES) {
    vec_store(end - LANES, vec_sums(lanes));
    return 0;
  }
  if (!last || held == 0) return held;
  for (size_t i = held; i < LANES; ++i) lanes[i] = vec_zero();
  float sums[LANES];
  vec_store(sums, vec_sums(lanes));
  for (size_t i = 0; i < held; ++i) end[(ptrdiff_t)i - (ptrdiff_t)held] = sums[i];
  return 0;
}

// Specialised on the constant row count, code form, offsets and scale width so that the loops
// above unroll and the accumulators stay in registers. Weight rows [first, last) times `ROWS`
// rows of x, pass_weights weight rows at a time.
#define SPECIALISE(ROWS, FORM, OFFSETS, SCALES)                                                    \
  static void rows##ROWS##_##FORM##_offsets##OFFSETS##_##SCALES(                                   \
      const uint8_t* codes, struct Planes p, const float* x, float* y, size_t n, size_t k,         \
      size_t first, size_t last) {                                                                 \
    const size_t row_bytes = code_row_bytes(FORM, k);                                              \
    const size_t weights = pass_weights(ROWS, FORM);                                               \
    const size_t ahead = prefetch_rows(ROWS, weights, row_bytes, pairs_rows(FORM));                \
    vec lanes[LANES];                                                                              \
    float x_quad[ROWS == 1 && QUAD_FORM(FORM) ? MAX_QUAD_K : 1];                                   \
    if (ROWS == 1 && quad_order(FORM, SCALES, k)) {                                                \
      quad_order_x(x, k, x_quad);                                                                  \
      x = x_quad;                                                                                  \
    }                                                                                              \
    size_t row = first, held = 0;                                                                  \
    for (; row + weights <= last; row += weights) {                                                \
      weight_rows(codes, p, x, y, n, k, row, weights, ahead, ROWS, FORM, OFFSETS, SCALES,          \
                  lanes + held);                                                                   \
      if (ROWS == 1) held = sum_held_rows(lanes, held + weights, y + row + weights, 0);            \
    }                                                                                              \
    for (; row < last; ++row) {                                                                    \
      weight_rows(codes, p, x, y, n, k, row, 1, ahead, ROWS, FORM, OFFSETS, SCALES, lanes + held); \
      if (ROWS == 1) held = sum_held_rows(lanes, held + 1, y + row + 1, 0);                        \
    }                                                                                              \
    if (ROWS == 1) sum_held_rows(lanes, held, y + last, 1);                                        \
  }
// A form with each scale form.
#define SPECIALISE_SCALES(ROWS, FORM, OFFSETS) \
  SPECIALISE(ROWS, FORM, OFFSETS, SCALES_F32)  \
  SPECIALISE(ROWS, FORM, OFFSETS, SCALES_F16) SPECIALISE(ROWS, FORM, OFFSETS, SCALES_TWO_LEVEL)
// The code forms and whether each has offsets (nibbles have them exactly when not centred),
// as FORM(f, offsets, arg) for each.
#define FOR_EACH_FORM(FORM, ARG)         \
  FORM(BYTES_32, 0, ARG)                 \
  FORM(NIBBLES_32, 1, ARG)               \
  FORM(NIBBLES_32_CENTRED, 0, ARG)       \
  FORM(NIBBLES_HIGH1_32, 1, ARG)         \
  FORM(NIBBLES_HIGH1_32_CENTRED, 0, ARG) \
  FORM(NIBBLES_HIGH2_16_CENTRED, 0, ARG) \
  FORM(NIBBLES_32_PAIRED, 1, ARG)        \
  FORM(NIBBLES_32_CENTRED_PAIRED, 0, ARG)
#define SPECIALISE_FORM(FORM, OFFSETS, ROWS) SPECIALISE_SCALES(ROWS, FORM, OFFSETS)
#define PASS_FORM_OF(FORM, OFFSETS, ROWS) PASS_FORM(ROWS, FORM, OFFSETS)
// Every form's passes of ROWS rows, and one pass of ROWS rows whatever the weight's form.
// E2M1 codes come only with E8M0 scales (forms_of), so they are specialised for those alone.
#define SPECIALISE_ROWS(ROWS)                                                               \
  FOR_EACH_FORM(SPECIALISE_FORM, ROWS)                                                      \
  SPECIALISE(ROWS, NIBBLES_32_E2M1, 0, SCALES_E8M0)                                         \
  static void pass##ROWS(enum CodeForm form, int has_offsets, enum ScaleForm scales,        \
                         const uint8_t* codes, struct Planes p, const float* x, float* y,   \
                         size_t n, size_t k, size_t first, size_t last) {                   \
    if (form == NIBBLES_32_E2M1) {                                                          \
      rows##ROWS##_NIBBLES_32_E2M1_offsets0_SCALES_E8M0(codes, p, x, y, n, k, first, last); \
      return;                                                                               \
    }                                                                                       \
    FOR_EACH_FORM(PASS_FORM_OF, ROWS)                                                       \
  }
// A switch, not a table of function pointers: the embedded library may hold no relocated data.
#define PASS_FORM(ROWS, FORM, OFFSETS)                                                        \
  if (form == FORM && has_offsets == OFFSETS) {                                               \
    if (scales == SCALES_F32) {                                                               \
      rows##ROWS##_##FORM##_offsets##OFFSETS##_SCALES_F32(codes, p, x, y, n, k, first, last); \
    } else if (scales == SCALES_F16) {                                                        \
      rows##ROWS##_##FORM##_offsets##OFFSETS##_SCALES_F16(codes, p, x, y, n, k, first, last); \
    } else {                                                                                  \
      rows##ROWS##_##FORM##_offsets##OFFSETS##_SCALES_TWO_LEVEL(codes, p, x, y, n, k, first,  \
                                                                last);                        \
    }                                                                                         \
    return;                                                                                   \
  }
SPECIALISE_ROWS(1)
SPECIALISE_ROWS(2)
SPECIALISE_ROWS(3)
SPECIALISE_ROWS(4)
SPECIALISE_ROWS(5)
SPECIALISE_ROWS(6)
SPECIALISE_ROWS(7)
SPECIALISE_ROWS(8)
#if MAX_ACTIVATION_ROWS == 16
SPECIALISE_ROWS(16)
#endif

// Rows of x MAX_ACTIVATION_ROWS at a time, then at most 8 (a pass of each count up to 8 is
// specialised).
INLINE size_t pass_rows(size_t left) {
  if (left >= MAX_ACTIVATION_ROWS) return MAX_ACTIVATION_ROWS;
  return left > 8 ? 8 : left;
}

#if MAX_ACTIVATION_ROWS == 16
#define PASS_CASES CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8) CASE(16)
#else
#define PASS_CASES CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)
#endif

// An entry point's loop over the passes of `rows` rows of x (k columns) into y (n columns): CASE,
// defined by the entry point, runs one pass of x_pass and y_pass. Each pass reads the
// workgroup's weight rows again, from cache after the first.
#define FOR_EACH_PASS                                      \
  for (size_t done = 0, pass; done < rows; done += pass) { \
    pass = pass_rows(rows - done);                         \
    const float* x_pass = x + done * k;                    \
    float* y_pass = y + done * n;                          \
    switch (pass) { PASS_CASES }                           \
  }

// Weights stored as 16-bit floats (f16 or bf16, kept narrow on the device), widened exactly to
// f32 and multiplied like the planes above: half the bytes of an f32 copy, no scales.
#if LANES == 16
INLINE vec load_wide(const uint16_t* p, int bf16) {
  const __m256i h = _mm256_loadu_si256((const __m256i*)p);
  return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
              : _mm512_cvtph_ps(h);
}
#else
INLINE vec load_wide(const uint16_t* p, int bf16) {
  const __m128i h = _mm_loadu_si128((const __m128i*)p);
  return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
              : _mm256_cvtph_ps(h);
}
#endif

// How far ahead of the 16-bit weights in hand one activation row's product prefetches them, a
// line at a time. The hardware prefetcher alone keeps up while x stays in the first-level cache,
// but a row of 8192 columns or more needs 32 KiB of x, which the streamed weights then push out.
// With the prefetch such rows stream faster from memory (the same bits; 2048 and 4096 columns
// unchanged), and a 1B BF16 decode's down projections (2048x8192) read at about its gate/up
// products' rate instead of below it. 1024, 2048 and 8192 bytes ahead gained less, 16384
// nothing (docs/PERFORMANCE.md, "WIDE_PREFETCH_BYTES").
#define WIDE_PREFETCH_BYTES 4096

// One activation row, four accumulators (k a multiple of LANES).
INLINE float wide_row_times_one(const uint16_t* w, const float* x, size_t k, int bf16) {
  vec acc[4] = {vec_zero(), vec_zero(), vec_zero(), vec_zero()};
  size_t i = 0;
  for (; i + 4 * LANES <= k; i += 4 * LANES) {
    for (size_t line = 0; line < 4 * LANES * sizeof(uint16_t); line += 64) {
      _mm_prefetch((const char*)(w + i) + WIDE_PREFETCH_BYTES + line, _MM_HINT_T0);
    }
    for (size_t u = 0; u < 4; ++u) {
      acc[u] = vec_fmadd(load_wide(w + i + u * LANES, bf16), vec_load(x + i + u * LANES), acc[u]);
    }
  }
  for (; i < k; i += LANES) acc[0] = vec_fmadd(load_wide(w + i, bf16), vec_load(x + i), acc[0]);
  return vec_sum(vec_add(vec_add(acc[0], acc[1]), vec_add(acc[2], acc[3])));
}

INLINE void wide_row_times_many(const uint16_t* w, const float* x, size_t k, size_t rows, int bf16,
                                float* out, size_t out_stride) {
  vec acc[MAX_ACTIVATION_ROWS];
  for (size_t t = 0; t < rows; ++t) acc[t] = vec_zero();
  for (size_t i = 0; i < k; i += LANES) {
    const vec v = load_wide(w + i, bf16);
    for (size_t t = 0; t < rows; ++t) acc[t] = vec_fmadd(v, vec_load(x + t * k + i), acc[t]);
  }
  for (size_t t = 0; t < rows; ++t) out[t * out_stride] = vec_sum(acc[t]);
}

// Several rows of x: no software prefetch (one row's product prefetches a line at a time, above);
// a row's worth of prefetches issued at once measured slower than none, which leaves one stream
// for the hardware prefetcher to follow (docs/PERFORMANCE.md, "Wide products of several rows").
#define SPECIALISE_WIDE(ROWS, BF16)                                                               \
  static void wide_rows##ROWS##_bf16##BF16(const uint16_t* w, const float* x, float* y, size_t n, \
                                           size_t k, size_t first, size_t last) {                 \
    for (size_t row = first; row < last; ++row) {                                                 \
      if (ROWS == 1) {                                                                            \
        y[row] = wide_row_times_one(w + row * k, x, k, BF16);                                     \
      } else {                                                                                    \
        wide_row_times_many(w + row * k, x, k, ROWS, BF16, y + row, n);                           \
      }                                                                                           \
    }                                                                                             \
  }
#define SPECIALISE_WIDE_ROWS(ROWS) SPECIALISE_WIDE(ROWS, 0) SPECIALISE_WIDE(ROWS, 1)
SPECIALISE_WIDE_ROWS(1)
SPECIALISE_WIDE_ROWS(2)
SPECIALISE_WIDE_ROWS(3)
SPECIALISE_WIDE_ROWS(4)
SPECIALISE_WIDE_ROWS(5)
SPECIALISE_WIDE_ROWS(6)
SPECIALISE_WIDE_ROWS(7)
SPECIALISE_WIDE_ROWS(8)
#if MAX_ACTIVATION_ROWS == 16
SPECIALISE_WIDE_ROWS(16)
#endif

// Many activation rows (prefill): register-blocked panels. A pass of rows_times_many loads an x
// vector for every FMA, so cache bandwidth, not the FMA units, bounds it (far below the f32 peak
// at 1B shape: docs/PERFORMANCE.md, "Register-blocked panels"). Here BLOCK_W_ROWS weight rows are
// dequantized once per PANEL_COLUMNS columns into a panel on the stack, and BLOCK_X_ROWS x
// BLOCK_W_ROWS accumulators stay in registers: an x vector loaded feeds BLOCK_W_ROWS FMAs, a
// panel vector BLOCK_X_ROWS. The accumulators are rows_times_many's (per lane, along k, in the
// same order; lanes summed once at the end), kept on the stack between panels, so the products
// are bit-identical whichever path takes a row.
#if LANES == 16
#define BLOCK_X_ROWS 4
#define BLOCK_W_ROWS 6
#define TILE_X_ROWS 32
#else
#define BLOCK_X_ROWS 3
#define BLOCK_W_ROWS 4
#define TILE_X_ROWS 64
#endif
// Columns per panel: BLOCK_W_ROWS rows of them stay in the first-level cache (8-12 KiB), and
// the accumulators go to the stack and back once per panel. 512 rather than 256: half as many
// trips to the stack, and faster products and prefill (docs/PERFORMANCE.md, "PANEL_COLUMNS").
#define PANEL_COLUMNS 512
// Fewer x rows than this take passes: a panel's dequantized copy pays only over several rows.
// (Overridable so that a benchmark can time passes against panels on the same rows.)
#ifndef PANEL_MIN_ROWS
#define PANEL_MIN_ROWS 8
#endif

// Where a panel's weights come from: planes (codes, scales, offsets) or 16-bit floats. Passed by
// value to inlined functions from specialised callers, so its fields are constants there.
struct WeightSource {
  const uint8_t* codes;
  struct Planes planes;
  const uint16_t* wide;  // 16-bit floats, when not null (codes unused)
  enum CodeForm form;
  int has_offsets;
  enum ScaleForm scales;
  int bf16;
};

// Weight rows [row, row + BLOCK_W_ROWS), columns [first, first + columns) as f32 into panel
// (row r at r * PANEL_COLUMNS), dequantized as everywhere above.
// Groups [g, end) of one weight row of planes (its codes and planes from the row on),
// dequantized into out (where group g goes).
INLINE void fill_groups(struct WeightSource w, const uint8_t* codes, struct Planes planes, size_t g,
                        size_t end, float* out) {
  const size_t vectors = vectors_per_group(w.form);
  for (size_t at = g; at < end; ++at) {
    vec weights[MAX_VECTORS_PER_GROUP];
    group_weights(codes, planes, at, w.form, w.scales, w.has_offsets, weights);
    for (size_t v = 0; v < vectors; ++v)
      vec_store(out + ((at - g) * vectors + v) * LANES, weights[v]);
  }
}

INLINE void fill_panel(struct WeightSource w, size_t k, size_t row, size_t first, size_t columns,
                       float* panel) {
  if (pairs_rows(w.form)) {
    // Rows in pairs (row even, BLOCK_W_ROWS even, whole lines): a pair's two rows a line (four
    // groups) at a time, so that its codes are read in ascending order, as hardware prefetchers
    // follow them; row by row (lines 0, 2, 4, 6, then 1, 3, 5, 7) ran slower than the same codes
    // unpaired, row after row (docs/PERFORMANCE.md, "Panels over paired rows").
    const size_t group = vectors_per_group(w.form) * LANES, groups = k / group;
    for (size_t r = 0; r < BLOCK_W_ROWS; r += 2) {
      const uint8_t* codes[2];
      struct Planes planes[2];
      for (size_t i = 0; i < 2; ++i) {
        codes[i] = code_row(w.codes, row + r + i, code_row_bytes(w.form, k), 1);
        planes[i] = planes_row(w.planes, row + r + i, groups, group, w.scales, 0);
      }
      for (size_t g = first / group; g < (first + columns) / group; g += 4) {
        for (size_t i = 0; i < 2; ++i) {
          fill_groups(w, codes[i], planes[i], g, g + 4,
                      panel + (r + i) * PANEL_COLUMNS + (g * group - first));
        }
      }
    }
    return;
  }
  for (size_t r = 0; r < BLOCK_W_ROWS; ++r) {
    float* out = panel + r * PANEL_COLUMNS;
    if (w.wide != NULL) {
      const uint16_t* values = w.wide + (row + r) * k + first;
      for (size_t c = 0; c < columns; c += LANES) vec_store(out + c, load_wide(values + c, w.bf16));
      continue;
    }
    const size_t vectors = vectors_per_group(w.form);
    const size_t group = vectors * LANES, groups = k / group;
    const uint8_t* codes =
        code_row(w.codes, row + r, code_row_bytes(w.form, k), pairs_rows(w.form));
    const struct Planes planes =
        planes_row(w.planes, row + r, groups, group, w.scales, high_row_bytes(w.form, k));
    size_t g = first / group;
#if LANES == 16
    if (reads_chunks(w.form)) {
      const size_t chunk_groups = CHUNK_VECTORS / vectors;
      for (; g + chunk_groups <= (first + columns) / group; g += chunk_groups) {
        vec weights[CHUNK_VECTORS];
        chunk_weights(codes, planes, g / chunk_groups, w.form, w.scales, w.has_offsets, weights);
        for (size_t v = 0; v < CHUNK_VECTORS; ++v)
          vec_store(out + (g * group - first) + v * LANES, weights[v]);
      }
    }
#endif
    fill_groups(w, codes, planes, g, (first + columns) / group, out + (g * group - first));
  }
}

// acc [x_rows][BLOCK_W_ROWS] += x [x_rows, columns] (row stride k) times the panel's rows, per
// lane.
INLINE void block_product(const float* x, size_t k, const float* panel, size_t columns,
                          size_t x_rows, vec* acc) {
  vec a[BLOCK_X_ROWS][BLOCK_W_ROWS];
  for (size_t t = 0; t < x_rows; ++t) {
    for (size_t j = 0; j < BLOCK_W_ROWS; ++j) a[t][j] = acc[t * BLOCK_W_ROWS + j];
  }
  for (size_t c = 0; c < columns; c += LANES) {
    vec xs[BLOCK_X_ROWS];
    for (size_t t = 0; t < x_rows; ++t) xs[t] = vec_load(x + t * k + c);
    for (size_t j = 0; j < BLOCK_W_ROWS; ++j) {
      const vec w = vec_load(panel + j * PANEL_COLUMNS + c);
      for (size_t t = 0; t < x_rows; ++t) a[t][j] = vec_fmadd(w, xs[t], a[t][j]);
    }
  }
  for (size_t t = 0; t < x_rows; ++t) {
    for (size_t j = 0; j < BLOCK_W_ROWS; ++j) acc[t * BLOCK_W_ROWS + j] = a[t][j];
  }
}
#define SPECIALISE_BLOCK(X_ROWS)                                                                  \
  static void block_product##X_ROWS(const float* x, size_t k, const float* panel, size_t columns, \
                                    vec* acc) {                                                   \
    block_product(x, k, panel, columns, X_ROWS, acc);                                             \
  }
SPECIALISE_BLOCK(1)
SPECIALISE_BLOCK(2)
SPECIALISE_BLOCK(3)
#if BLOCK_X_ROWS == 4
SPECIALISE_BLOCK(4)
#endif

// All `tile` x rows times one panel, BLOCK_X_ROWS at a time, into acc [tile][BLOCK_W_ROWS].
INLINE void tile_product(const float* x, size_t k, const float* panel, size_t columns, size_t tile,
                         vec* acc) {
  size_t t = 0;
  for (; t + BLOCK_X_ROWS <= tile; t += BLOCK_X_ROWS) {
#if BLOCK_X_ROWS == 4
    block_product4(x + t * k, k, panel, columns, acc + t * BLOCK_W_ROWS);
#else
    block_product3(x + t * k, k, panel, columns, acc + t * BLOCK_W_ROWS);
#endif
  }
  const size_t left = tile - t;
  if (left == 1) block_product1(x + t * k, k, panel, columns, acc + t * BLOCK_W_ROWS);
  if (left == 2) block_product2(x + t * k, k, panel, columns, acc + t * BLOCK_W_ROWS);
  if (left == 3) block_product3(x + t * k, k, panel, columns, acc + t * BLOCK_W_ROWS);
}

// y [rows, n] = x [rows, k] times weight rows [first, last) (a multiple of BLOCK_W_ROWS of them),
// panel by panel; k a multiple of LANES and of the weight's group.
INLINE void panels(struct WeightSource w, const float* x, float* y, size_t rows, size_t n, size_t k,
                   size_t first, size_t last) {
  float panel[BLOCK_W_ROWS * PANEL_COLUMNS];
  vec acc[TILE_X_ROWS * BLOCK_W_ROWS];
  for (size_t t0 = 0; t0 < rows; t0 += TILE_X_ROWS) {
    const size_t tile = rows - t0 < TILE_X_ROWS ? rows - t0 : TILE_X_ROWS;
    for (size_t row = first; row < last; row += BLOCK_W_ROWS) {
      for (size_t i = 0; i < tile * BLOCK_W_ROWS; ++i) acc[i] = vec_zero();
      for (size_t c = 0; c < k; c += PANEL_COLUMNS) {
        const size_t columns = k - c < PANEL_COLUMNS ? k - c : PANEL_COLUMNS;
        fill_panel(w, k, row, c, columns, panel);
        tile_product(x + t0 * k + c, k, panel, columns, tile, acc);
      }
      for (size_t t = 0; t < tile; ++t) {
        for (size_t j = 0; j < BLOCK_W_ROWS; ++j) {
          y[(t0 + t) * n + row + j] = vec_sum(acc[t * BLOCK_W_ROWS + j]);
        }
      }
    }
  }
}

// Specialised per weight form, as the passes are.
#define SPECIALISE_PANELS(FORM, OFFSETS, SCALES)                                              \
  static void panels_##FORM##_offsets##OFFSETS##_##SCALES(                                    \
      const uint8_t* codes, struct Planes p, const float* x, float* y, size_t rows, size_t n, \
      size_t k, size_t first, size_t last) {                                                  \
    const struct WeightSource w = {codes, p, NULL, FORM, OFFSETS, SCALES, 0};                 \
    panels(w, x, y, rows, n, k, first, last);                                                 \
  }
#define SPECIALISE_PANEL_SCALES(FORM, OFFSETS) \
  SPECIALISE_PANELS(FORM, OFFSETS, SCALES_F32) \
  SPECIALISE_PANELS(FORM, OFFSETS, SCALES_F16) SPECIALISE_PANELS(FORM, OFFSETS, SCALES_TWO_LEVEL)
#define SPECIALISE_PANEL_FORM(FORM, OFFSETS, ARG) SPECIALISE_PANEL_SCALES(FORM, OFFSETS)
FOR_EACH_FORM(SPECIALISE_PANEL_FORM, 0)
SPECIALISE_PANELS(NIBBLES_32_E2M1, 0, SCALES_E8M0)

#define PANEL_FORM(FORM, OFFSETS)                                                             \
  if (form == FORM && has_offsets == OFFSETS) {                                               \
    if (scales == SCALES_F32) {                                                               \
      panels_##FORM##_offsets##OFFSETS##_SCALES_F32(codes, p, x, y, rows, n, k, first, last); \
    } else if (scales == SCALES_F16) {                                                        \
      panels_##FORM##_offsets##OFFSETS##_SCALES_F16(codes, p, x, y, rows, n, k, first, last); \
    } else {                                                                                  \
      panels_##FORM##_offsets##OFFSETS##_SCALES_TWO_LEVEL(codes, p, x, y, rows, n, k, first,  \
                                                          last);                              \
    }                                                                                         \
    return;                                                                                   \
  }
static void planar_panels(enum CodeForm form, int has_offsets, enum ScaleForm scales,
                          const uint8_t* codes, struct Planes p, const float* x, float* y,
                          size_t rows, size_t n, size_t k, size_t first, size_t last) {
#define PANEL_FORM_OF(FORM, OFFSETS, ARG) PANEL_FORM(FORM, OFFSETS)
  if (form == NIBBLES_32_E2M1) {
    panels_NIBBLES_32_E2M1_offsets0_SCALES_E8M0(codes, p, x, y, rows, n, k, first, last);
    return;
  }
  FOR_EACH_FORM(PANEL_FORM_OF, 0)
}

static void wide_panels_bf160(const uint16_t* values, const float* x, float* y, size_t rows,
                              size_t n, size_t k, size_t first, size_t last) {
  const struct WeightSource w = {
      NULL, {NULL, NULL, NULL, NULL, NULL}, values, BYTES_32, 0, SCALES_F32, 0};
  panels(w, x, y, rows, n, k, first, last);
}
static void wide_panels_bf161(const uint16_t* values, const float* x, float* y, size_t rows,
                              size_t n, size_t k, size_t first, size_t last) {
  const struct WeightSource w = {
      NULL, {NULL, NULL, NULL, NULL, NULL}, values, BYTES_32, 0, SCALES_F32, 1};
  panels(w, x, y, rows, n, k, first, last);
}

#if defined(__AVX512VNNI__)
// --math fast (prefill only, opt-in): the activations come quantized to i8 per 32 columns
// (x * 127 / max|x| of each block rounded, by quantize_int8_row below), and each weight row's
// integer codes meet them in VNNI dot products (vpdpbusd: 64 products of an unsigned code byte
// and a signed activation byte, summed in fours into 16 i32 lanes) instead of f32 FMAs, as
// llama.cpp's CPU products do. Not exact: x is rounded to 8 bits.
//
// 512 columns (16 blocks of 32) go at a time, one block per i32 lane, so that a lane's sum
// belongs to one block and is scaled once per 512 columns: code vector v holds elements
// 4v .. 4v + 3 of each block, lane p of block INT8_LANE_BLOCK(p). quantize_int8_row lays x out the
// same way. A group's weight is scale * u + zero_term, u its unsigned code and zero_term = offset -
// scale * bias, so a block's sum is dx * (scale * sum(u * q) + zero_term * sum(q)), with dx the
// block's activation scale and sum(q) given by the quantizer as dx * sum(q) (xs, per 16 columns:
// Q6_K's groups are 16).
#define INT8_COLUMNS 512
#define INT8_VECTORS 8
// Lane p of a 512-column run holds block INT8_LANE_BLOCK(p): what a 4x4 transpose of dwords
// within 128-bit lanes leaves (transpose_dwords).
#define INT8_LANE_BLOCK(p) (4 * ((p) % 4) + (p) / 4)
// A row's columns past its whole runs (k % 512: SmolLM2's 576 leaves 64) form its tail, taken
// 128 columns (four blocks) at a time in two code vectors: elements 0-15 of the four blocks, then
// 16-31 (lane p: block p / 4, four consecutive elements), what a run's codes are before their
// transpose. Each of a lane's sums then belongs to one block (and each vector to one 16-column
// half), scaled once per four blocks. x's width in the kernel's layout is k rounded up to whole
// groups of four blocks, each row padded with zero columns (codes, scales and sums 0).
#define INT8_TAIL_COLUMNS 128
#define INT8_TAIL_GROUPS (INT8_COLUMNS / INT8_TAIL_COLUMNS - 1)
INLINE size_t int8_width(size_t k) {
  return (k + INT8_TAIL_COLUMNS - 1) / INT8_TAIL_COLUMNS * INT8_TAIL_COLUMNS;
}
// Register blocks: INT8_W_ROWS x INT8_X_ROWS i32 accumulators (24), plus the x vectors and a code
// vector, in AVX-512's 32 registers.
#define INT8_W_ROWS 8
#define INT8_X_ROWS 3

// out[c] lane L, dword r = in[r] lane L, dword c.
INLINE void transpose_dwords(const __m512i in[4], __m512i out[4]) {
  const __m512i t0 = _mm512_unpacklo_epi32(in[0], in[1]);
  const __m512i t1 = _mm512_unpackhi_epi32(in[0], in[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(in[2], in[3]);
  const __m512i t3 = _mm512_unpackhi_epi32(in[2], in[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Four blocks of 32 bytes in column order (128 bytes at `bytes`, two blocks per 64) as a run's
// codes before their transpose: first elements 0-15 of each block, second 16-31 (lane p: block
// p / 4).
INLINE void four_block_bytes(const void* bytes, __m512i* first, __m512i* second) {
  const __m512i a = _mm512_loadu_si512(bytes);
  const __m512i b = _mm512_loadu_si512((const char*)bytes + 64);
  *first = _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  *second = _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

// Columns [128c, 128c + 128) of a weight row's unsigned codes: elements 0-15 of its four blocks
// in `first` (16 bytes per 128-bit lane), 16-31 in `second`.
INLINE void four_block_codes(const uint8_t* codes, const uint8_t* highs, size_t c,
                             enum CodeForm form, int paired, __m512i* first, __m512i* second) {
  if (form == BYTES_32) {
    // Signed codes + 128 as unsigned (bias 128).
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    four_block_bytes(codes + c * 128, first, second);
    *first = _mm512_xor_si512(*first, flip);
    *second = _mm512_xor_si512(*second, flip);
  } else if (reads_chunks(form)) {
    chunk_codes(codes, highs, c, form, 1, first, second);
  } else {
    // Nibbles: byte j of a block holds element j (low) and j + 16 (high).
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i packed = _mm512_loadu_si512((const void*)(codes + code_byte(c * 64, paired)));
    *first = _mm512_and_si512(packed, nibble);
    *second = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
    if (form == NIBBLES_32_E2M1) {
      // E2M1 codes as their values plus E2M1_BIAS (int8_bias): one byte shuffle per 64.
      const __m512i values = _mm512_broadcast_i32x4(e2m1_biased_values());
      *first = _mm512_shuffle_epi8(values, *first);
      *second = _mm512_shuffle_epi8(values, *second);
    }
  }
}

// Run b (512 columns) of a weight row's unsigned codes in the lane layout above: four groups of
// four blocks, transposed.
INLINE void run_codes(const uint8_t* codes, const uint8_t* highs, size_t b, enum CodeForm form,
                      int paired, __m512i out[INT8_VECTORS]) {
  __m512i first[4], second[4];
  for (size_t r = 0; r < 4; ++r)
    four_block_codes(codes, highs, b * 4 + r, form, paired, first + r, second + r);
  transpose_dwords(first, out);
  transpose_dwords(second, out + 4);
}

// dst [0, size) = src [0, count) then zeros (size a multiple of 64): masked loads, which read
// nothing past count, so nothing past a weight's end.
INLINE void copy_zero_padded(uint8_t* dst, const uint8_t* src, size_t count, size_t size) {
  for (size_t at = 0; at < size; at += 64) {
    const size_t left = count > at ? count - at : 0;
    const __mmask64 mask = left >= 64 ? ~0ull : (1ull << left) - 1;
    _mm512_store_si512((void*)(dst + at), _mm512_maskz_loadu_epi8(mask, src + at));
  }
}

// dst [0, size) = a weight row's code bytes [from, from + count) then zeros: a line at a time
// where the rows go in pairs (their lines are whole, code_row), else as one run.
INLINE void copy_code_tail(uint8_t* dst, const uint8_t* row, size_t from, size_t count, size_t size,
                           int paired) {
  if (!paired) {
    copy_zero_padded(dst, row + from, count, size);
    return;
  }
  for (size_t at = 0; at < size; at += 64) {
    const size_t left = count > at ? count - at : 0;
    copy_zero_padded(dst + at, row + code_byte(from + at, 1), left < 64 ? left : 64, 64);
  }
}

// What the int8 product's unsigned code is offset by: code_bias, and 128 for Q8_0's signed
// codes, which run_codes flips to unsigned.
INLINE float int8_bias(enum CodeForm form) {
  return (float)(form == BYTES_32 ? 128 : code_bias(form));
}

// Groups [g0, g0 + count) of a weight row's factors (planes from the row on): scales into s and
// zero terms (offset - scale * bias, int8_bias) into o, 0 past count (to 32 groups).
INLINE void run_factors(struct WeightSource w, struct Planes p, size_t g0, size_t count, float* s,
                        float* o) {
  const size_t group = vectors_per_group(w.form) * LANES;
  for (size_t g = 0; g < 32; g += LANES) vec_store(s + g, vec_zero()), vec_store(o + g, vec_zero());
  const size_t bytes = scale_bytes(w.scales), per_super = SUPER_GROUP / group;
  expand_row_factors((const char*)p.scales + g0 * bytes, p.super_scales + g0 / per_super, count,
                     group, w.scales, s);
  if (w.has_offsets) {
    expand_row_factors((const char*)p.offsets + g0 * bytes, p.super_offsets + g0 / per_super, count,
                       group, w.scales, o);
  }
  const float bias = int8_bias(w.form);
  for (size_t g = 0; g < count; ++g) o[g] = (w.has_offsets ? o[g] : 0) - s[g] * bias;
}

// A register block's weight rows for one run: codes, and per lane (block) and half (16 columns;
// both halves alike where groups are 32) the scale and the zero term.
struct Int8Panel {
  __m512i codes[INT8_W_ROWS][INT8_VECTORS];
  vec scales[INT8_W_ROWS][2];
  vec zero_terms[INT8_W_ROWS][2];
};

// Weight rows row .. row + INT8_W_ROWS (past `last`, the last row again: its sums are not
// stored), run b, into the panel.
INLINE void fill_int8_panel(struct WeightSource w, size_t k, size_t row, size_t last, size_t b,
                            struct Int8Panel* panel) {
  const size_t group = vectors_per_group(w.form) * LANES, groups = k / group;
  const size_t run_groups = INT8_COLUMNS / group, g0 = b * run_groups;
  const __m512i lane_block =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (size_t j = 0; j < INT8_W_ROWS; ++j) {
    const size_t r = row + j < last ? row + j : last - 1;
    const struct Planes p =
        planes_row(w.planes, r, groups, group, w.scales, high_row_bytes(w.form, k));
    run_codes(code_row(w.codes, r, code_row_bytes(w.form, k), pairs_rows(w.form)), p.high_bits, b,
              w.form, pairs_rows(w.form), panel->codes[j]);
    float s[32], o[32];
    run_factors(w, p, g0, run_groups, s, o);
    if (run_groups == 16) {
      panel->scales[j][0] = panel->scales[j][1] = _mm512_permutexvar_ps(lane_block, vec_load(s));
      panel->zero_terms[j][0] = panel->zero_terms[j][1] =
          _mm512_permutexvar_ps(lane_block, vec_load(o));
    } else {
      // Groups of 16: lane p's halves are groups 2 * block and 2 * block + 1.
      const __m512i low = _mm512_slli_epi32(lane_block, 1);
      const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(1));
      panel->scales[j][0] = _mm512_permutex2var_ps(vec_load(s), low, vec_load(s + 16));
      panel->scales[j][1] = _mm512_permutex2var_ps(vec_load(s), high, vec_load(s + 16));
      panel->zero_terms[j][0] = _mm512_permutex2var_ps(vec_load(o), low, vec_load(o + 16));
      panel->zero_terms[j][1] = _mm512_permutex2var_ps(vec_load(o), high, vec_load(o + 16));
    }
  }
}

// A register block's weight rows for a row's tail: per group of four blocks its two code vectors,
// and per lane and half (where groups are 16 columns; both alike where they are 32) the scale
// and zero term of the lane's group.
struct Int8Tail {
  __m512i codes[INT8_W_ROWS][INT8_TAIL_GROUPS][2];
  vec scales[INT8_W_ROWS][INT8_TAIL_GROUPS][2];
  vec zero_terms[INT8_W_ROWS][INT8_TAIL_GROUPS][2];
};

// Weight rows row .. row + INT8_W_ROWS (as fill_int8_panel), their tails (k % 512 columns,
// `groups` groups of four blocks) into the tail panel: codes from a copy, after zeros, of the
// row's columns past its runs.
INLINE void fill_int8_tail(struct WeightSource w, size_t k, size_t row, size_t last, size_t groups,
                           struct Int8Tail* tail) {
  const size_t group = vectors_per_group(w.form) * LANES, row_groups = k / group;
  const size_t first = k / INT8_COLUMNS * INT8_COLUMNS, columns = k - first;
  // Lane p of tail group c is block 4c + p / 4: group 4c + p / 4 (groups of 32), or its half h,
  // group 8c + 2 (p / 4) + h (16).
  const __m512i lane_block = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  uint8_t codes[INT8_COLUMNS] __attribute__((aligned(64)));
  uint8_t highs[INT8_COLUMNS / 4] __attribute__((aligned(64)));
  for (size_t j = 0; j < INT8_W_ROWS; ++j) {
    const size_t r = row + j < last ? row + j : last - 1;
    const struct Planes p =
        planes_row(w.planes, r, row_groups, group, w.scales, high_row_bytes(w.form, k));
    copy_code_tail(codes, code_row(w.codes, r, code_row_bytes(w.form, k), pairs_rows(w.form)),
                   code_row_bytes(w.form, first), code_row_bytes(w.form, columns),
                   code_row_bytes(w.form, INT8_COLUMNS), pairs_rows(w.form));
    if (high_bits_per_code(w.form) != 0) {
      copy_zero_padded(highs, p.high_bits + high_row_bytes(w.form, first),
                       high_row_bytes(w.form, columns), high_row_bytes(w.form, INT8_COLUMNS));
    }
    float s[32], o[32];
    run_factors(w, p, first / group, columns / group, s, o);
    for (size_t c = 0; c < groups; ++c) {
      four_block_codes(codes, highs, c, w.form, 0, &tail->codes[j][c][0], &tail->codes[j][c][1]);
      for (size_t h = 0; h < 2; ++h) {
        const __m512i block = _mm512_add_epi32(lane_block, _mm512_set1_epi32((int)(4 * c)));
        const __m512i at =
            group == 32 ? block
                        : _mm512_add_epi32(_mm512_slli_epi32(block, 1), _mm512_set1_epi32((int)h));
        tail->scales[j][c][h] = _mm512_permutex2var_ps(vec_load(s), at, vec_load(s + 16));
        tail->zero_terms[j][c][h] = _mm512_permutex2var_ps(vec_load(o), at, vec_load(o + 16));
      }
    }
  }
}

// acc [x_rows][INT8_W_ROWS] += x rows (qx at this run, row stride width; their scales xd,
// row stride width / 32, and scaled sums xs, row stride width / 16, at this run) times the panel's
// rows, per lane. halves: 2 where the weight's groups are 16 columns (each half scaled on its own).
INLINE void int8_block_product(const int8_t* qx, const float* xd, const float* xs, size_t width,
                               const struct Int8Panel* panel, size_t halves, float bias,
                               size_t x_rows, vec* acc) {
  for (size_t h = 0; h < halves; ++h) {
    __m512i sums[INT8_X_ROWS][INT8_W_ROWS];
    for (size_t t = 0; t < x_rows; ++t) {
      for (size_t j = 0; j < INT8_W_ROWS; ++j) sums[t][j] = _mm512_setzero_si512();
    }
    const size_t per_half = INT8_VECTORS / halves;
    for (size_t v = h * per_half; v < (h + 1) * per_half; ++v) {
      __m512i xv[INT8_X_ROWS];
      for (size_t t = 0; t < x_rows; ++t)
        xv[t] = _mm512_loadu_si512((const void*)(qx + t * width + v * 64));
      for (size_t j = 0; j < INT8_W_ROWS; ++j) {
        const __m512i u = panel->codes[j][v];
        for (size_t t = 0; t < x_rows; ++t) sums[t][j] = _mm512_dpbusd_epi32(sums[t][j], u, xv[t]);
      }
    }
    for (size_t t = 0; t < x_rows; ++t) {
      const vec dx = vec_load(xd + t * (width / 32));
      const float* x_sums = xs + t * (width / 16);
      const vec q_sum = halves == 2 ? vec_load(x_sums + h * 16)
                                    : vec_add(vec_load(x_sums), vec_load(x_sums + 16));
      if (bias != 0) {
        // Centred forms (zero_term = -scale * bias): scale * (dx * sum(u*q) - bias * dx *
        // sum(q)), one operation less per accumulator.
        const vec minus = vec_mul(q_sum, vec_broadcast(-bias));
        for (size_t j = 0; j < INT8_W_ROWS; ++j) {
          const vec block = vec_fmadd(_mm512_cvtepi32_ps(sums[t][j]), dx, minus);
          acc[t * INT8_W_ROWS + j] =
              vec_fmadd(block, panel->scales[j][h], acc[t * INT8_W_ROWS + j]);
        }
        continue;
      }
      for (size_t j = 0; j < INT8_W_ROWS; ++j) {
        vec a = acc[t * INT8_W_ROWS + j];
        a = vec_fmadd(_mm512_cvtepi32_ps(sums[t][j]), vec_mul(panel->scales[j][h], dx), a);
        acc[t * INT8_W_ROWS + j] = vec_fmadd(panel->zero_terms[j][h], q_sum, a);
      }
    }
  }
}
#define SPECIALISE_INT8_BLOCK(X_ROWS)                                                        \
  static void int8_block_product##X_ROWS(const int8_t* qx, const float* xd, const float* xs, \
                                         size_t width, const struct Int8Panel* panel,        \
                                         size_t halves, float bias, vec* acc) {              \
    if (halves == 2) {                                                                       \
      int8_block_product(qx, xd, xs, width, panel, 2, bias, X_ROWS, acc);                    \
    } else {                                                                                 \
      int8_block_product(qx, xd, xs, width, panel, 1, bias, X_ROWS, acc);                    \
    }                                                                                        \
  }
SPECIALISE_INT8_BLOCK(1)
SPECIALISE_INT8_BLOCK(2)
SPECIALISE_INT8_BLOCK(3)

// acc [x_rows][INT8_W_ROWS] += x rows' tails (qx, xd and xs at the first column past the runs,
// row strides as int8_block_product's) times the tail panel's rows, per lane, as
// int8_block_product folds a run: per group of four blocks (lane p: block p / 4), with the
// block's dx * sum(q) (or its half's) in the first of its four lanes.
INLINE void int8_tail_product(const int8_t* qx, const float* xd, const float* xs, size_t width,
                              const struct Int8Tail* tail, size_t groups, size_t halves, float bias,
                              size_t x_rows, vec* acc) {
  const __m512i lane_block = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  // Lane 4b takes sum b (of 8 per group: block b's halves at 2b and 2b + 1).
  const __m512i half0 = _mm512_setr_epi32(0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0);
  const __m512i half1 = _mm512_add_epi32(half0, _mm512_set1_epi32(1));
  for (size_t c = 0; c < groups; ++c) {
    for (size_t t = 0; t < x_rows; ++t) {
      const int8_t* q = qx + t * width + c * INT8_TAIL_COLUMNS;
      const __m512i x0 = _mm512_loadu_si512((const void*)q);
      const __m512i x1 = _mm512_loadu_si512((const void*)(q + 64));
      const vec dx = _mm512_permutexvar_ps(
          lane_block, _mm512_castps128_ps512(_mm_loadu_ps(xd + t * (width / 32) + 4 * c)));
      const vec sums = _mm512_castps256_ps512(_mm256_loadu_ps(xs + t * (width / 16) + 8 * c));
      const vec q0 = _mm512_maskz_permutexvar_ps(0x1111, half0, sums);
      const vec q1 = _mm512_maskz_permutexvar_ps(0x1111, half1, sums);
      for (size_t h = 0; h < halves; ++h) {
        const vec q_sum = halves == 2 ? (h ? q1 : q0) : vec_add(q0, q1);
        const vec minus = vec_mul(q_sum, vec_broadcast(-bias));
        for (size_t j = 0; j < INT8_W_ROWS; ++j) {
          __m512i n = _mm512_setzero_si512();
          if (halves == 1 || h == 0) n = _mm512_dpbusd_epi32(n, tail->codes[j][c][0], x0);
          if (halves == 1 || h == 1) n = _mm512_dpbusd_epi32(n, tail->codes[j][c][1], x1);
          const vec sum = _mm512_cvtepi32_ps(n);
          vec* a = acc + t * INT8_W_ROWS + j;
          if (bias != 0) {
            *a = vec_fmadd(vec_fmadd(sum, dx, minus), tail->scales[j][c][h], *a);
          } else {
            *a = vec_fmadd(sum, vec_mul(tail->scales[j][c][h], dx), *a);
            *a = vec_fmadd(tail->zero_terms[j][c][h], q_sum, *a);
          }
        }
      }
    }
  }
}
#define SPECIALISE_INT8_TAIL(X_ROWS)                                                              \
  static void int8_tail_product##X_ROWS(const int8_t* qx, const float* xd, const float* xs,       \
                                        size_t width, const struct Int8Tail* tail, size_t groups, \
                                        size_t halves, float bias, vec* acc) {                    \
    if (halves == 2) {                                                                            \
      int8_tail_product(qx, xd, xs, width, tail, groups, 2, bias, X_ROWS, acc);                   \
    } else {                                                                                      \
      int8_tail_product(qx, xd, xs, width, tail, groups, 1, bias, X_ROWS, acc);                   \
    }                                                                                             \
  }
SPECIALISE_INT8_TAIL(1)
SPECIALISE_INT8_TAIL(2)
SPECIALISE_INT8_TAIL(3)

// FN##X (the specialisation for X x rows) for the next min(left, INT8_X_ROWS) rows.
#define BY_X_ROWS(LEFT, FN, ...) \
  do {                           \
    if ((LEFT) >= 3) {           \
      FN##3(__VA_ARGS__);        \
    } else if ((LEFT) == 2) {    \
      FN##2(__VA_ARGS__);        \
    } else {                     \
      FN##1(__VA_ARGS__);        \
    }                            \
  } while (0)

// y [rows, n] = x (quantized: qx, xd, xs, rows of int8_width(k)) times weight rows [first,
// last), k a multiple of 32: whole runs, then the tail.
INLINE void int8_panels(struct WeightSource w, const int8_t* qx, const float* xd, const float* xs,
                        float* y, size_t rows, size_t n, size_t k, size_t first, size_t last) {
  const size_t width = int8_width(k), runs = k / INT8_COLUMNS;
  const size_t tail_groups = (width - runs * INT8_COLUMNS) / INT8_TAIL_COLUMNS;
  struct Int8Panel panel;
  struct Int8Tail tail;
  vec acc[TILE_X_ROWS * INT8_W_ROWS];
  const size_t halves = w.form == NIBBLES_HIGH2_16_CENTRED ? 2 : 1;
  const float bias = int8_bias(w.form);  // 0 for the forms with offsets
  for (size_t t0 = 0; t0 < rows; t0 += TILE_X_ROWS) {
    const size_t tile = rows - t0 < TILE_X_ROWS ? rows - t0 : TILE_X_ROWS;
    for (size_t row = first; row < last; row += INT8_W_ROWS) {
      for (size_t i = 0; i < tile * INT8_W_ROWS; ++i) acc[i] = vec_zero();
      // Whole runs, then the tail (step b == runs): x at the same offsets either way.
      for (size_t b = 0; b < runs + (tail_groups > 0); ++b) {
        const int in_tail = b == runs;
        if (in_tail) {
          fill_int8_tail(w, k, row, last, tail_groups, &tail);
        } else {
          fill_int8_panel(w, k, row, last, b, &panel);
        }
        for (size_t t = 0; t < tile; t += INT8_X_ROWS) {
          const size_t at = t0 + t, left = tile - t;
          const int8_t* q = qx + at * width + b * INT8_COLUMNS;
          const float* d = xd + at * (width / 32) + b * 16;
          const float* s = xs + at * (width / 16) + b * 32;
          vec* a = acc + t * INT8_W_ROWS;
          if (in_tail) {
            BY_X_ROWS(left, int8_tail_product, q, d, s, width, &tail, tail_groups, halves, bias, a);
          } else {
            BY_X_ROWS(left, int8_block_product, q, d, s, width, &panel, halves, bias, a);
          }
        }
      }
      for (size_t t = 0; t < tile; ++t) {
        for (size_t j = 0; j < INT8_W_ROWS && row + j < last; ++j) {
          y[(t0 + t) * n + row + j] = vec_sum(acc[t * INT8_W_ROWS + j]);
        }
      }
    }
  }
}

#define SPECIALISE_INT8_PANELS(FORM, OFFSETS, SCALES)                                            \
  static void int8_panels_##FORM##_offsets##OFFSETS##_##SCALES(                                  \
      const uint8_t* codes, struct Planes p, const int8_t* qx, const float* xd, const float* xs, \
      float* y, size_t rows, size_t n, size_t k, size_t first, size_t last) {                    \
    const struct WeightSource w = {codes, p, NULL, FORM, OFFSETS, SCALES, 0};                    \
    int8_panels(w, qx, xd, xs, y, rows, n, k, first, last);                                      \
  }
#define SPECIALISE_INT8_SCALES(FORM, OFFSETS, ARG)  \
  SPECIALISE_INT8_PANELS(FORM, OFFSETS, SCALES_F32) \
  SPECIALISE_INT8_PANELS(FORM, OFFSETS, SCALES_F16) \
  SPECIALISE_INT8_PANELS(FORM, OFFSETS, SCALES_TWO_LEVEL)
FOR_EACH_FORM(SPECIALISE_INT8_SCALES, 0)
SPECIALISE_INT8_PANELS(NIBBLES_32_E2M1, 0, SCALES_E8M0)

#define INT8_PANEL_FORM(FORM, OFFSETS, ARG)                                                      \
  if (form == FORM && has_offsets == OFFSETS) {                                                  \
    if (scales == SCALES_F32) {                                                                  \
      int8_panels_##FORM##_offsets##OFFSETS##_SCALES_F32(codes, p, qx, xd, xs, y, rows, n, k,    \
                                                         first, last);                           \
    } else if (scales == SCALES_F16) {                                                           \
      int8_panels_##FORM##_offsets##OFFSETS##_SCALES_F16(codes, p, qx, xd, xs, y, rows, n, k,    \
                                                         first, last);                           \
    } else {                                                                                     \
      int8_panels_##FORM##_offsets##OFFSETS##_SCALES_TWO_LEVEL(codes, p, qx, xd, xs, y, rows, n, \
                                                               k, first, last);                  \
    }                                                                                            \
    return;                                                                                      \
  }
static void planar_int8_panels(enum CodeForm form, int has_offsets, enum ScaleForm scales,
                               const uint8_t* codes, struct Planes p, const int8_t* qx,
                               const float* xd, const float* xs, float* y, size_t rows, size_t n,
                               size_t k, size_t first, size_t last) {
  if (form == NIBBLES_32_E2M1) {
    int8_panels_NIBBLES_32_E2M1_offsets0_SCALES_E8M0(codes, p, qx, xd, xs, y, rows, n, k, first,
                                                     last);
    return;
  }
  FOR_EACH_FORM(INT8_PANEL_FORM, 0)
}
#endif

// The first row at or after which a workgroup's rows [first, last) are left to passes: with
// PANEL_MIN_ROWS x rows or more, all but the last (last - first) % BLOCK_W_ROWS go in panels.
INLINE size_t panel_rows_end(size_t rows, size_t first, size_t last) {
  if (rows < PANEL_MIN_ROWS || last <= first) return first;
  return first + (last - first) / BLOCK_W_ROWS * BLOCK_W_ROWS;
}

// The code and scale forms of an entry point's arguments; 0 where the emitter emits no such
// weight.
static int forms_of(size_t group, size_t has_offsets, size_t code_bits, ptrdiff_t code_bias,
                    size_t e2m1_codes, size_t scale_bits, size_t paired_codes, size_t k,
                    enum CodeForm* form, enum ScaleForm* scale_form) {
  if (e2m1_codes) {
    // E2M1 nibbles in groups of 32 under E8M0 exponents, row after row.
    if (code_bits != 4 || group != 32 || code_bias != 0 || has_offsets || scale_bits != 8 ||
        paired_codes) {
      return 0;
    }
    *form = NIBBLES_32_E2M1;
    *scale_form = SCALES_E8M0;
    return 1;
  }
  if (code_bits == 8 && group == 32 && code_bias == 0 && !has_offsets) {
    *form = BYTES_32;
  } else if (code_bits == 4 && group == 32 && code_bias == 0 && has_offsets) {
    *form = NIBBLES_32;
  } else if (code_bits == 4 && group == 32 && code_bias == -8 && !has_offsets) {
    *form = NIBBLES_32_CENTRED;
  } else if (code_bits == 5 && group == 32 && code_bias == 0 && has_offsets) {
    *form = NIBBLES_HIGH1_32;
  } else if (code_bits == 5 && group == 32 && code_bias == -16 && !has_offsets) {
    *form = NIBBLES_HIGH1_32_CENTRED;
  } else if (code_bits == 6 && group == 16 && code_bias == -32 && !has_offsets) {
    *form = NIBBLES_HIGH2_16_CENTRED;
  } else {
    return 0;
  }
  if (paired_codes) {
    // Nibbles without high bits, in rows of whole 64-byte lines.
    if (k % 128 != 0 || (*form != NIBBLES_32 && *form != NIBBLES_32_CENTRED)) return 0;
    *form = *form == NIBBLES_32 ? NIBBLES_32_PAIRED : NIBBLES_32_CENTRED_PAIRED;
  }
  if (scale_bits == 32) {
    *scale_form = SCALES_F32;
  } else if (scale_bits == 16) {
    *scale_form = SCALES_F16;
  } else if (scale_bits == 8) {
    *scale_form = SCALES_TWO_LEVEL;
  } else {
    return 0;
  }
  return 1;
}

// What each planar product entry point takes of the weight's arguments (as the emitter passes
// them: iree_planar_kernel.cpp, planar_call) for its workgroup: the forms, the codes and planes
// from row 0, and its weight rows [first, last) of n (first may pass last in a workgroup past n).
struct EntryWeight {
  enum CodeForm form;
  enum ScaleForm scale_form;
  const uint8_t* codes;
  struct Planes planes;
  size_t first, last;
};

// The entry's weight, or 0 where the emitter emits no such weight (forms_of).
static int entry_weight(const uint8_t* codes, const uint8_t* highs, const void* scales,
                        size_t scales_offset, const void* offsets, size_t offsets_offset,
                        const uint16_t* supers, const uint16_t* super_offsets, size_t n, size_t k,
                        size_t group, size_t has_offsets, size_t code_bits, ptrdiff_t code_bias,
                        size_t e2m1_codes, size_t scale_bits, size_t paired_codes,
                        size_t rows_per_workgroup, size_t workgroup, struct EntryWeight* w) {
  if (!forms_of(group, has_offsets, code_bits, code_bias, e2m1_codes, scale_bits, paired_codes, k,
                &w->form, &w->scale_form)) {
    return 0;
  }
  const size_t bytes = scale_bytes(w->scale_form);
  w->codes = codes;
  w->planes =
      (struct Planes){(const char*)scales + scales_offset * bytes,
                      (const char*)offsets + offsets_offset * bytes, supers, super_offsets, highs};
  w->first = workgroup * rows_per_workgroup;
  w->last = w->first + rows_per_workgroup < n ? w->first + rows_per_workgroup : n;
  return 1;
}

// An entry point's call of entry_weight on its MEMREF arguments (named as every planar entry
// names them), into `w`.
#define ENTRY_WEIGHT(w)                                                                            \
  entry_weight(codes + codes_offset, highs + highs_offset, scales, scales_offset, offsets,         \
               offsets_offset, supers + supers_offset, super_offsets + super_offsets_offset, n, k, \
               group, has_offsets, code_bits, code_bias, e2m1_codes, scale_bits, paired_codes,     \
               rows_per_workgroup, workgroup, &(w))

// y [rows, n] = x [rows, k] times the weight [n, k] transposed, for weight rows
// [workgroup * rows_per_workgroup, +rows_per_workgroup): codes [n, k] bytes (code_bits 8) or
// [n, k / 2] nibbles (code_bits 4 to 6; code_bias 0, or minus half the range), with, for 5 and
// 6 bits, the bits above the nibbles in highs [n, k * (code_bits - 4) / 8] (group 16 for 6 bits,
// else 32), scales and offsets [n, k / group]
// of f32 (scale_bits 32), f16 (16) or i8 (8: two-level, their factors in super_scales and
// super_offsets, f16 [n, k / 256]). e2m1_codes 1: the nibbles are E2M1 codes (code_bias 0, no
// offsets, group 32) and the scales (8) their E8M0 exponents. `offsets` is read only when
// has_offsets and the super planes only when two-level (the emitter passes the scales again
// otherwise); group is 16 or 32. paired_codes 1: the codes go in row pairs (code_row; 4-bit codes,
// k a multiple of 128).
void xlacel_planar_matmul_workgroup(MEMREF(const uint8_t, codes), MEMREF(const uint8_t, highs),
                                    MEMREF(const void, scales), MEMREF(const void, offsets),
                                    MEMREF(const uint16_t, supers),
                                    MEMREF(const uint16_t, super_offsets), MEMREF(const float, x),
                                    MEMREF(float, y), size_t rows, size_t n, size_t k, size_t group,
                                    size_t has_offsets, size_t code_bits, ptrdiff_t code_bias,
                                    size_t e2m1_codes, size_t scale_bits, size_t paired_codes,
                                    size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(codes), UNUSED_MEMREF_FIELDS(highs), UNUSED_MEMREF_FIELDS(scales);
  UNUSED_MEMREF_FIELDS(offsets), UNUSED_MEMREF_FIELDS(supers);
  UNUSED_MEMREF_FIELDS(super_offsets), UNUSED_MEMREF_FIELDS(x), UNUSED_MEMREF_FIELDS(y);
  struct EntryWeight w;
  if (!ENTRY_WEIGHT(w)) return;
  x += x_offset, y += y_offset;
  const size_t panels_end = panel_rows_end(rows, w.first, w.last);
  if (panels_end > w.first) {
    planar_panels(w.form, has_offsets != 0, w.scale_form, w.codes, w.planes, x, y, rows, n, k,
                  w.first, panels_end);
  }
  const size_t first = panels_end;
#define CASE(ROWS)                                                                              \
  case ROWS:                                                                                    \
    pass##ROWS(w.form, has_offsets != 0, w.scale_form, w.codes, w.planes, x_pass, y_pass, n, k, \
               first, w.last);                                                                  \
    break;
  FOR_EACH_PASS
#undef CASE
}

#if defined(__AVX512VNNI__)
// --math fast: xlacel_planar_matmul_workgroup's product with x given quantized (int8_panels):
// qx i8 [rows, K], xd f32 [rows, K / 32] and xs f32 [rows, K / 16] in the layouts above (runs,
// then the tail), K = int8_width(k) (x padded with zero columns); k a multiple of 32.
void xlacel_planar_matmul_int8_workgroup(
    MEMREF(const uint8_t, codes), MEMREF(const uint8_t, highs), MEMREF(const void, scales),
    MEMREF(const void, offsets), MEMREF(const uint16_t, supers),
    MEMREF(const uint16_t, super_offsets), MEMREF(const int8_t, qx), MEMREF(const float, xd),
    MEMREF(const float, xs), MEMREF(float, y), size_t rows, size_t n, size_t k, size_t group,
    size_t has_offsets, size_t code_bits, ptrdiff_t code_bias, size_t e2m1_codes, size_t scale_bits,
    size_t paired_codes, size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(codes), UNUSED_MEMREF_FIELDS(highs), UNUSED_MEMREF_FIELDS(scales);
  UNUSED_MEMREF_FIELDS(offsets), UNUSED_MEMREF_FIELDS(supers);
  UNUSED_MEMREF_FIELDS(super_offsets), UNUSED_MEMREF_FIELDS(qx), UNUSED_MEMREF_FIELDS(xd);
  UNUSED_MEMREF_FIELDS(xs), UNUSED_MEMREF_FIELDS(y);
  struct EntryWeight w;
  if (!ENTRY_WEIGHT(w)) return;
  if (k % 32 != 0 || w.first >= w.last) return;  // the emitter emits only such shapes
  planar_int8_panels(w.form, has_offsets != 0, w.scale_form, w.codes, w.planes, qx + qx_offset,
                     xd + xd_offset, xs + xs_offset, y + y_offset, rows, n, k, w.first, w.last);
}

#define INT8_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
// A block's codes (elements 0-15, then 16-31) as bytes: x * inverse rounded to nearest, ties to
// even.
INLINE void block_codes(__m512 low, __m512 high, float inverse, __m128i* low_bytes,
                        __m128i* high_bytes) {
  const __m512 by = _mm512_set1_ps(inverse);
  *low_bytes = _mm512_cvtepi32_epi8(
      _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(low, by), INT8_ROUND)));
  *high_bytes = _mm512_cvtepi32_epi8(
      _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(high, by), INT8_ROUND)));
}

// The sum of 16 signed bytes.
INLINE int byte_sum(__m128i bytes) {
  __m128i sum = _mm_dpbusd_epi32(_mm_setzero_si128(), _mm_set1_epi8(1), bytes);
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(1, 0, 3, 2)));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(sum);
}

// A block's largest |x|.
INLINE float block_largest(__m512 low, __m512 high) {
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(low), _mm512_abs_ps(high)));
}

// One whole run (512 columns) of a row quantized: its 16 blocks' scales and inverses as vectors,
// their codes in column order, then laid out as run_codes lays out Q8_0's (the same 128-bit lane
// picks and dword transposes), and each lane's code sums (over 4 elements per vector, so over 16
// per half) by VNNI dot products with ones, scaled in the lane order.
static void quantize_int8_run(const float* x, int8_t* qx, float* xd, float* xs) {
  float largest[16], inverses[16];
  for (size_t b = 0; b < 16; ++b) {
    largest[b] = block_largest(_mm512_loadu_ps(x + b * 32), _mm512_loadu_ps(x + b * 32 + 16));
  }
  const __m512 most = _mm512_loadu_ps(largest), limit = _mm512_set1_ps(127);
  const __m512 scales = _mm512_div_ps(most, limit);
  const __mmask16 nonzero = _mm512_cmp_ps_mask(most, _mm512_setzero_ps(), _CMP_GT_OQ);
  _mm512_storeu_ps(inverses, _mm512_maskz_div_ps(nonzero, limit, most));
  int8_t codes[INT8_COLUMNS] __attribute__((aligned(64)));
  for (size_t b = 0; b < 16; ++b) {
    block_codes(_mm512_loadu_ps(x + b * 32), _mm512_loadu_ps(x + b * 32 + 16), inverses[b],
                (__m128i*)(codes + b * 32), (__m128i*)(codes + b * 32 + 16));
  }
  __m512i first[4], second[4], out[INT8_VECTORS];
  for (size_t r = 0; r < 4; ++r) four_block_bytes(codes + r * 128, first + r, second + r);
  transpose_dwords(first, out);
  transpose_dwords(second, out + 4);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sums[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  for (size_t v = 0; v < INT8_VECTORS; ++v) {
    _mm512_storeu_si512((void*)(qx + v * 64), out[v]);
    sums[v / 4] = _mm512_dpbusd_epi32(sums[v / 4], ones, out[v]);
  }
  const __m512i lane_blocks = _mm512_setr_epi32(
      INT8_LANE_BLOCK(0), INT8_LANE_BLOCK(1), INT8_LANE_BLOCK(2), INT8_LANE_BLOCK(3),
      INT8_LANE_BLOCK(4), INT8_LANE_BLOCK(5), INT8_LANE_BLOCK(6), INT8_LANE_BLOCK(7),
      INT8_LANE_BLOCK(8), INT8_LANE_BLOCK(9), INT8_LANE_BLOCK(10), INT8_LANE_BLOCK(11),
      INT8_LANE_BLOCK(12), INT8_LANE_BLOCK(13), INT8_LANE_BLOCK(14), INT8_LANE_BLOCK(15));
  const __m512 lane_scales = _mm512_permutexvar_ps(lane_blocks, scales);
  _mm512_storeu_ps(xd, lane_scales);
  _mm512_storeu_ps(xs, _mm512_mul_ps(lane_scales, _mm512_cvtepi32_ps(sums[0])));
  _mm512_storeu_ps(xs + 16, _mm512_mul_ps(lane_scales, _mm512_cvtepi32_ps(sums[1])));
}

// One row of x quantized for the int8 product, as int8_panels reads it: per block of 32 columns
// the scale dx = max|x| / 127, codes round(x / dx) (127 / max|x|, 0 for a block of zeros, times
// x) and dx times each 16 columns' code sum; whole runs by quantize_int8_run, the tail's codes per
// group of four blocks (elements 0-15 of each, then 16-31) with their scales and sums in column
// order. Past k (the tail padded to int8_width) blocks of zeros: codes, scales and sums 0.
static void quantize_int8_row(const float* x, size_t k, int8_t* qx, float* xd, float* xs) {
  const size_t width = int8_width(k), runs = k / INT8_COLUMNS;
  for (size_t run = 0; run < runs; ++run) {
    quantize_int8_run(x + run * INT8_COLUMNS, qx + run * INT8_COLUMNS, xd + run * 16,
                      xs + run * 32);
  }
  for (size_t column = runs * INT8_COLUMNS; column < width; column += 32) {
    const __mmask16 first = column < k ? 0xffff : 0, second = column + 16 < k ? 0xffff : 0;
    const __m512 low = _mm512_maskz_loadu_ps(first, x + column);
    const __m512 high = _mm512_maskz_loadu_ps(second, x + column + 16);
    const float largest = block_largest(low, high);
    const float scale = largest / 127, inverse = largest > 0 ? 127 / largest : 0;
    int8_t* group =
        qx + column / INT8_TAIL_COLUMNS * INT8_TAIL_COLUMNS + column % INT8_TAIL_COLUMNS / 32 * 16;
    __m128i low_bytes, high_bytes;
    block_codes(low, high, inverse, &low_bytes, &high_bytes);
    _mm_storeu_si128((__m128i*)group, low_bytes);
    _mm_storeu_si128((__m128i*)(group + 64), high_bytes);
    xd[column / 32] = scale;
    xs[column / 16] = scale * (float)byte_sum(low_bytes);
    xs[column / 16 + 1] = scale * (float)byte_sum(high_bytes);
  }
}

// --math fast: x [rows, k] quantized for xlacel_planar_matmul_int8_workgroup into one buffer
// (quantize_int8_row per row): qx i8 [rows, K], then xd f32 [rows, K / 32], then xs f32
// [rows, K / 16] (K = int8_width(k), a multiple of 128, so each part starts 64-byte aligned
// when the buffer does); rows_per_workgroup rows per workgroup. One dispatch for what the graph
// took ~7 (~19 with a tail) to compute and lay out.
void xlacel_quantize_int8_rows_workgroup(MEMREF(const float, x), MEMREF(int8_t, out), size_t rows,
                                         size_t k, size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(x), UNUSED_MEMREF_FIELDS(out);
  const size_t width = int8_width(k), first = workgroup * rows_per_workgroup;
  const size_t last = first + rows_per_workgroup < rows ? first + rows_per_workgroup : rows;
  int8_t* qx = out + out_offset;
  float* xd = (float*)(qx + rows * width);
  float* xs = xd + rows * (width / 32);
  for (size_t t = first; t < last; ++t) {
    quantize_int8_row(x + x_offset + t * k, k, qx + t * width, xd + t * (width / 32),
                      xs + t * (width / 16));
  }
}
#endif

// out [rows, k] = rows ids[t] of the weight values [n, k] (f16, or bf16 when bf16 is 1), each
// value widened exactly to f32, for t in [workgroup * rows_per_workgroup, +rows_per_workgroup):
// an embedding lookup that reads the values at any address (where a model file maps them). An id
// outside [0, n) takes the nearest row, as StableHLO's gather clamps its start indices. k is a
// multiple of 16.
void xlacel_wide_take_rows_workgroup(MEMREF(const uint16_t, values), MEMREF(const int32_t, ids),
                                     MEMREF(float, out), size_t rows, size_t n, size_t k,
                                     size_t bf16, size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(values), UNUSED_MEMREF_FIELDS(ids), UNUSED_MEMREF_FIELDS(out);
  const size_t first = workgroup * rows_per_workgroup;
  const size_t last = first + rows_per_workgroup < rows ? first + rows_per_workgroup : rows;
  if (k % 16 != 0 || n == 0) return;  // the emitter emits only such shapes
  values += values_offset, ids += ids_offset, out += out_offset;
  for (size_t t = first; t < last; ++t) {
    const int32_t id = ids[t];
    const size_t row = id < 0 ? 0 : (size_t)id >= n ? n - 1 : (size_t)id;
    for (size_t c = 0; c < k; c += LANES) {
      vec_store(out + t * k + c, load_wide(values + row * k + c, (int)bf16));
    }
  }
}

// y [rows, n] = x [rows, k] times the weight values [n, k] (f16, or bf16 when bf16 is 1)
// transposed, for weight rows [workgroup * rows_per_workgroup, +rows_per_workgroup); k is a
// multiple of 16.
void xlacel_wide_matmul_workgroup(MEMREF(const uint16_t, values), MEMREF(const float, x),
                                  MEMREF(float, y), size_t rows, size_t n, size_t k, size_t bf16,
                                  size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(values), UNUSED_MEMREF_FIELDS(x), UNUSED_MEMREF_FIELDS(y);
  size_t first = workgroup * rows_per_workgroup;
  size_t last = first + rows_per_workgroup;
  if (last > n) last = n;
  if (k % 16 != 0) return;  // the emitter emits only such shapes
  values += values_offset, x += x_offset, y += y_offset;
  const size_t panels_end = panel_rows_end(rows, first, last);
  if (panels_end > first) {
    if (bf16) {
      wide_panels_bf161(values, x, y, rows, n, k, first, panels_end);
    } else {
      wide_panels_bf160(values, x, y, rows, n, k, first, panels_end);
    }
  }
  first = panels_end;
#define CASE(ROWS)                                                        \
  case ROWS:                                                              \
    if (bf16) {                                                           \
      wide_rows##ROWS##_bf161(values, x_pass, y_pass, n, k, first, last); \
    } else {                                                              \
      wide_rows##ROWS##_bf160(values, x_pass, y_pass, n, k, first, last); \
    }                                                                     \
    break;
  FOR_EACH_PASS
#undef CASE
}

// --math fast's decode product (iree_planar_kernel.cpp, PlanarProduct::kInt8Rows). The panels
// above fill a transposed panel per 8 weight rows, which costs more than one x row saves
// (docs/PERFORMANCE.md, "kInt8MinRows"); here each weight row's
// codes are read as stored and meet x quantized in column order: per block of 32 columns, 32
// unsigned codes in one 256-bit vector (elements 0-15 from the low nibbles, 16-31 from the high
// ones: column order), times x's 32 signed codes by vpmaddubsw and vpmaddwd into 8 i32 lanes
// (lanes 0-3: columns 0-15), converted and scaled once per block. AVX2 only, so every object
// holds it. Not exact, as the panels are not: x is rounded to 8 bits.
//
// x quantized for it (xlacel_quantize_int8_columns_workgroup): per row, qx i8 [k] in column
// order, xd f32 [k / 32] (dx = max|x| / 127 of the block), xs f32 [k / 16] (dx times the sum of
// each 16 columns' codes); the codes round(x * 127 / max|x|), ties to even, 0 for a block of
// zeros, as quantize_int8_row forms them.

// One block of 32 columns of x quantized: returns its codes in column order, dx in *dx, the two
// halves' code sums in sums[0..1].
INLINE __m256i quantize_columns_block(const float* x, float* dx, int sums[2]) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4], most = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    most = _mm256_max_ps(most, _mm256_andnot_ps(sign, v[i]));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(most), _mm256_extractf128_ps(most, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  const float largest = _mm_cvtss_f32(m);
  const float inverse = largest > 0 ? 127 / largest : 0;
  const __m256 by = _mm256_set1_ps(inverse);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_cvtps_epi32(
        _mm256_round_ps(_mm256_mul_ps(v[i], by), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // i32 -> i8 in column order: packs work within 128-bit lanes, a dword permute puts them back.
  const __m256i words01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i words23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words01, words23),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  // Code sums per 16 columns: |q| <= 127, so the pairwise sums by vpmaddubsw with ones (as
  // unsigned ones times signed codes) do not saturate.
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes);
  const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));  // lane i: columns 4i..
  const __m128i low = _mm256_castsi256_si128(quads), high = _mm256_extracti128_si256(quads, 1);
  __m128i s = _mm_hadd_epi32(low, high);  // columns 0-7, 8-15, 16-23, 24-31
  s = _mm_hadd_epi32(s, s);               // 0-15, 16-31
  sums[0] = _mm_cvtsi128_si32(s);
  sums[1] = _mm_extract_epi32(s, 1);
  *dx = largest / 127;
  return bytes;
}

// x [rows, k] (k a multiple of 32) quantized into one buffer: qx i8 [rows, k], then xd f32
// [rows, k / 32], then xs f32 [rows, k / 16], for rows [first, last). With `pairs` the codes go in
// pair order: per two blocks b, b + 1 (64 columns), b's columns 0-15, b + 1's 0-15, b's 16-31,
// b + 1's 16-31, the order in which pair_codes splits one 32-byte load of the two blocks' nibbles;
// a last block without a pair, and every block without `pairs`, in column order.
INLINE void quantize_columns(const float* x, int8_t* qx, size_t rows, size_t k, size_t first,
                             size_t last, int pairs) {
  float* xd = (float*)(qx + rows * k);
  float* xs = xd + rows * (k / 32);
  const size_t blocks = k / 32;
  for (size_t t = first; t < last; ++t) {
    int8_t* codes = qx + t * k;
    float *d = xd + t * blocks, *sums_of = xs + t * (k / 16);
    __m256i first = _mm256_setzero_si256();  // a pair's first block, held until its second
    for (size_t b = 0; b < blocks; ++b) {
      int sums[2];
      const __m256i bytes = quantize_columns_block(x + t * k + b * 32, d + b, sums);
      sums_of[2 * b] = d[b] * (float)sums[0];
      sums_of[2 * b + 1] = d[b] * (float)sums[1];
      if (pairs && b % 2 == 1) {
        _mm256_storeu_si256((__m256i*)(codes + (b - 1) * 32),
                            _mm256_permute2x128_si256(first, bytes, 0x20));
        _mm256_storeu_si256((__m256i*)(codes + b * 32),
                            _mm256_permute2x128_si256(first, bytes, 0x31));
      } else if (pairs && b + 1 < blocks) {
        first = bytes;
      } else {
        _mm256_storeu_si256((__m256i*)(codes + b * 32), bytes);  // column order
      }
    }
  }
}

// x quantized for the int8 rows product of Q8_0's bytes: codes in column order.
void xlacel_quantize_int8_columns_workgroup(MEMREF(const float, x), MEMREF(int8_t, out),
                                            size_t rows, size_t k, size_t rows_per_workgroup,
                                            size_t workgroup) {
  UNUSED_MEMREF_FIELDS(x), UNUSED_MEMREF_FIELDS(out);
  const size_t first = workgroup * rows_per_workgroup;
  const size_t last = first + rows_per_workgroup < rows ? first + rows_per_workgroup : rows;
  quantize_columns(x + x_offset, out + out_offset, rows, k, first, last, 0);
}

// x quantized for the int8 rows product of packed codes: codes in pair order. (Tools built
// against several revisions of this file test for it.)
#define PLANAR_INT8_PAIRS 1
void xlacel_quantize_int8_pairs_workgroup(MEMREF(const float, x), MEMREF(int8_t, out), size_t rows,
                                          size_t k, size_t rows_per_workgroup, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(x), UNUSED_MEMREF_FIELDS(out);
  const size_t first = workgroup * rows_per_workgroup;
  const size_t last = first + rows_per_workgroup < rows ? first + rows_per_workgroup : rows;
  quantize_columns(x + x_offset, out + out_offset, rows, k, first, last, 1);
}

// Block b of a weight row's codes in column order: unsigned (u, the code plus its form's
// code_bias), or for Q8_0 the signed codes as stored.
INLINE __m256i column_codes(const uint8_t* codes, const uint8_t* highs, size_t b,
                            enum CodeForm form) {
  if (form == BYTES_32) return _mm256_loadu_si256((const __m256i*)(codes + b * 32));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i packed =
      _mm_loadu_si128((const __m128i*)(codes + code_byte(b * 16, pairs_rows(form))));
  __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble),
                               _mm_and_si128(packed, nibble));
  if (form == NIBBLES_32_E2M1) {
    u = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(e2m1_biased_values()), u);
  } else if (high_bits_per_code(form) == 1) {
    // Element e's bit is bit e / 4 of byte e % 4 (high_bits16).
    int32_t word;
    __builtin_memcpy(&word, highs + b * 4, 4);
    const __m256i bit =
        _mm256_setr_epi8(1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 32, 32, 32,
                         32, 64, 64, 64, 64, -128, -128, -128, -128);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_set1_epi32(word), bit), bit);
    u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  } else if (high_bits_per_code(form) == 2) {
    // Element e's two bits at bits 2 (e / 8) of byte e % 8 (model_files/planar_blocks.h).
    int64_t word;
    __builtin_memcpy(&word, highs + b * 8, 8);
    const __m256i fields = _mm256_and_si256(
        _mm256_srlv_epi64(_mm256_set1_epi64x(word), _mm256_setr_epi64x(0, 2, 4, 6)),
        _mm256_set1_epi8(3));
    u = _mm256_or_si256(u, _mm256_slli_epi16(fields, 4));  // fields of 2 bits: no carry out
  }
  return u;
}

// What column_codes adds to a form's codes: code_bias (0 for Q8_0's signed codes). (The entry
// point's code_bias argument hides the function there.)
INLINE float column_bias(enum CodeForm form) {
  return (float)code_bias(form);
}

#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
// sum + the dot products of 4 unsigned bytes of a with 4 signed bytes of b, per i32 lane:
// vpdpbusd, AVX-512 VNNI's (EVEX) or, on CPUs without AVX-512, AVX-VNNI's (VEX: Intel cores from
// Alder Lake on), the same instruction.
INLINE __m256i dot_bytes(__m256i sum, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__)
  return _mm256_dpbusd_epi32(sum, a, b);
#else
  return _mm256_dpbusd_avx_epi32(sum, a, b);
#endif
}
#endif

// codes . q per 4 columns: 8 i32 lanes (lane i: columns 4i .. 4i + 3). Q8_0's signed codes as
// unsigned (+ 128) would saturate vpmaddubsw's i16 pair sums: they go as |c| times q signed by c
// (vpmaddubsw's unsigned operand, at most 128 x 127 x 2), as llama.cpp's do.
INLINE __m256i column_dots(__m256i u, __m256i q, enum CodeForm form) {
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
  // One vpdpbusd for the two: the same sums (vpmaddubsw's pairs do not saturate here).
  if (form == BYTES_32) {
    return dot_bytes(_mm256_setzero_si256(), _mm256_sign_epi8(u, u), _mm256_sign_epi8(q, u));
  }
  return dot_bytes(_mm256_setzero_si256(), u, q);
#endif
  const __m256i ones = _mm256_set1_epi16(1);
  if (form == BYTES_32) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(u, u), _mm256_sign_epi8(q, u)),
                             ones);
  }
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones);
}

// Blocks b and b + 1 of a weight row's packed codes (b even), unsigned as column_codes gives
// them, split as x's pair order lays out its codes: *low holds columns 0-15 of b then of b + 1,
// *high their columns 16-31. The two blocks' 32 bytes are one load (low nibbles: columns 0-15 of
// a block, high nibbles: 16-31; a row pair's interleave keeps a row's 64 bytes together). Not
// for Q8_0's bytes, whose x stays in column order.
INLINE void pair_codes(const uint8_t* codes, const uint8_t* highs, size_t b, enum CodeForm form,
                       __m256i* low, __m256i* high) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i packed =
      _mm256_loadu_si256((const __m256i*)(codes + code_byte(b * 16, pairs_rows(form))));
  __m256i l = _mm256_and_si256(packed, nibble);
  __m256i h = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
  if (form == NIBBLES_32_E2M1) {
    const __m256i values = _mm256_broadcastsi128_si256(e2m1_biased_values());
    l = _mm256_shuffle_epi8(values, l);
    h = _mm256_shuffle_epi8(values, h);
  } else if (high_bits_per_code(form) == 1) {
    // Element e's bit is bit e / 4 of byte e % 4 of its block's word (high_bits16): each lane
    // holds its block's word four times.
    int64_t words;
    __builtin_memcpy(&words, highs + b * 4, 8);
    const __m256i word = _mm256_permutevar8x32_epi32(_mm256_set1_epi64x(words),
                                                     _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    const __m256i low_bit = _mm256_setr_epi8(1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 1, 1,
                                             1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8);
    const __m256i high_bit = _mm256_slli_epi16(low_bit, 4);
    const __m256i sixteen = _mm256_set1_epi8(0x10);
    l = _mm256_or_si256(
        l, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(word, low_bit), low_bit), sixteen));
    h = _mm256_or_si256(
        h,
        _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(word, high_bit), high_bit), sixteen));
  } else if (high_bits_per_code(form) == 2) {
    // Element e's two bits at bits 2 (e / 8) of byte e % 8 of its block's 8 bytes: each lane
    // holds its block's 8 bytes twice.
    const __m256i words = _mm256_permute4x64_epi64(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(highs + b * 8))), 0x50);
    const __m256i three = _mm256_set1_epi8(3);
    const __m256i low_fields =
        _mm256_and_si256(_mm256_srlv_epi64(words, _mm256_setr_epi64x(0, 2, 0, 2)), three);
    const __m256i high_fields =
        _mm256_and_si256(_mm256_srlv_epi64(words, _mm256_setr_epi64x(4, 6, 4, 6)), three);
    l = _mm256_or_si256(l, _mm256_slli_epi16(low_fields, 4));  // 2-bit fields: no carry out
    h = _mm256_or_si256(h, _mm256_slli_epi16(high_fields, 4));
  }
  *low = l, *high = h;
}

// Two blocks' codes (pair_codes) times x's (q_low, q_high in pair order) for groups of 32: 8 i32
// lanes, 0-3 block b's sums, 4-7 block b + 1's. The 4- and 5-bit forms add their two vpmaddubsw
// results as i16 first: four products of a code below 64 and |q| <= 127 stay below 2^15.
INLINE __m256i pair_dots(__m256i low, __m256i high, __m256i q_low, __m256i q_high) {
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
  return dot_bytes(dot_bytes(_mm256_setzero_si256(), low, q_low), high, q_high);
#else
  return _mm256_madd_epi16(
      _mm256_add_epi16(_mm256_maddubs_epi16(low, q_low), _mm256_maddubs_epi16(high, q_high)),
      _mm256_set1_epi16(1));
#endif
}

// Most x rows one pass over a weight row's codes takes (int8_rows_times_few): each block's codes
// are unpacked once for all of them, so a few rows (a verify call's drafted tokens, a small
// decode batch) cost little more than one.
#define INT8_FEW_ROWS 4
// Most weight rows one pass takes: with one x row, both rows of a pair where the codes go in row
// pairs (code_row), so that the pass reads the pair's one ascending stream; one row a pass read
// every other line and streamed slower (docs/PERFORMANCE.md, "Int8 rows over row pairs").
#define INT8_PAIR_ROWS 2

// A weight row as the int8 rows product reads it: its codes from its start, its high bits and
// factors expanded (scales s and zero terms z = offset - scale * bias per group), and where its
// sum for x row t goes (out[t * out_stride]).
struct Int8Row {
  const uint8_t* codes;
  const uint8_t* highs;
  const float* s;
  const float* z;
  float* out;
};

// `weights` (at most INT8_PAIR_ROWS) weight rows times `rows` (at most INT8_FEW_ROWS) rows of x
// quantized (x row t: qx + t * k, its dx at xd + t * k / 32 and code sums at xs + t * k / 16).
// Each (weight row, x row)'s arithmetic is the same whatever rows go with it.
INLINE void int8_rows_times_few(const struct Int8Row* w, size_t weights, const int8_t* qx,
                                const float* xd, const float* xs, size_t k, enum CodeForm form,
                                size_t ahead, size_t rows, size_t out_stride) {
  const size_t blocks = k / 32;
  const int sixteen = form_group(form) == 16;
  // Two accumulators per (weight row, x row), one per pair of blocks of two a pass (a constant
  // index, so that they stay in registers). A pair's scales: lanes 0-3 block b's s dx, 4-7 block
  // b + 1's; for groups of 16 one such vector for columns 0-15 of each block and one for 16-31.
  __m256 acc[INT8_PAIR_ROWS][INT8_FEW_ROWS][2];
  for (size_t i = 0; i < weights; ++i) {
    for (size_t t = 0; t < rows; ++t) acc[i][t][0] = acc[i][t][1] = _mm256_setzero_ps();
  }
  const __m256i halves = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
#define INT8_PAIR(B, A)                                                                        \
  do {                                                                                         \
    __m256i low[INT8_PAIR_ROWS], high[INT8_PAIR_ROWS];                                         \
    for (size_t i = 0; i < weights; ++i) {                                                     \
      pair_codes(w[i].codes, w[i].highs, (B), form, low + i, high + i);                        \
    }                                                                                          \
    for (size_t t = 0; t < rows; ++t) {                                                        \
      const int8_t* q = qx + t * k + (B)*32;                                                   \
      const __m256i q_low = _mm256_loadu_si256((const __m256i*)q);                             \
      const __m256i q_high = _mm256_loadu_si256((const __m256i*)(q + 32));                     \
      const __m128 dx = _mm_castpd_ps(_mm_load_sd((const double*)(xd + t * blocks + (B))));    \
      for (size_t i = 0; i < weights; ++i) {                                                   \
        if (sixteen) {                                                                         \
          /* s[2B .. 2B + 3] times dx[B], dx[B], dx[B + 1], dx[B + 1]. */                      \
          const __m256 scales = _mm256_castps128_ps256(                                        \
              _mm_mul_ps(_mm_loadu_ps(w[i].s + 2 * (B)), _mm_unpacklo_ps(dx, dx)));            \
          acc[i][t][A] = _mm256_fmadd_ps(                                                      \
              _mm256_cvtepi32_ps(column_dots(low[i], q_low, form)),                            \
              _mm256_permutevar8x32_ps(scales, _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2)),     \
              acc[i][t][A]);                                                                   \
          acc[i][t][A] = _mm256_fmadd_ps(                                                      \
              _mm256_cvtepi32_ps(column_dots(high[i], q_high, form)),                          \
              _mm256_permutevar8x32_ps(scales, _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3)),     \
              acc[i][t][A]);                                                                   \
        } else {                                                                               \
          const __m128 scales =                                                                \
              _mm_mul_ps(_mm_castpd_ps(_mm_load_sd((const double*)(w[i].s + (B)))), dx);       \
          acc[i][t][A] = _mm256_fmadd_ps(                                                      \
              _mm256_cvtepi32_ps(pair_dots(low[i], high[i], q_low, q_high)),                   \
              _mm256_permutevar8x32_ps(_mm256_castps128_ps256(scales), halves), acc[i][t][A]); \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } while (0)
  // One block in column order (Q8_0's codes, and a last block without a pair): block b's scale
  // s[b] dx[b] in every lane, or for groups of 16 s[2b] dx[b] in lanes 0-3 and s[2b + 1] dx[b] in
  // 4-7.
#define INT8_BLOCK(B, A)                                                                           \
  do {                                                                                             \
    __m256i u[INT8_PAIR_ROWS];                                                                     \
    __m256 group_scales[INT8_PAIR_ROWS];                                                           \
    for (size_t i = 0; i < weights; ++i) {                                                         \
      u[i] = column_codes(w[i].codes, w[i].highs, (B), form);                                      \
      group_scales[i] =                                                                            \
          sixteen ? _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castpd_ps(                 \
                                                 _mm_load_sd((const double*)(w[i].s + 2 * (B))))), \
                                             halves)                                               \
                  : _mm256_broadcast_ss(w[i].s + (B));                                             \
    }                                                                                              \
    for (size_t t = 0; t < rows; ++t) {                                                            \
      const __m256i q = _mm256_loadu_si256((const __m256i*)(qx + t * k + (B)*32));                 \
      const __m256 d = _mm256_broadcast_ss(xd + t * blocks + (B));                                 \
      for (size_t i = 0; i < weights; ++i) {                                                       \
        const __m256 dots = _mm256_cvtepi32_ps(column_dots(u[i], q, form));                        \
        acc[i][t][A] = _mm256_fmadd_ps(dots, _mm256_mul_ps(group_scales[i], d), acc[i][t][A]);     \
      }                                                                                            \
    }                                                                                              \
  } while (0)
  size_t b = 0;
  if (form == BYTES_32) {
    for (; b + 2 <= blocks; b += 2) {
      for (size_t i = 0; i < weights; ++i) stream_prefetch(w[i].codes + b * 32 + ahead);
      INT8_BLOCK(b, 0);
      INT8_BLOCK(b + 1, 1);
    }
  } else {
    for (; b + 4 <= blocks; b += 4) {
      for (size_t i = 0; i < weights; ++i) {
        stream_prefetch(w[i].codes + code_byte(b * 16, pairs_rows(form)) + ahead);
      }
      INT8_PAIR(b, 0);
      INT8_PAIR(b + 2, 1);
    }
    if (b + 2 <= blocks) {
      INT8_PAIR(b, 0);
      b += 2;
    }
  }
  if (b < blocks) INT8_BLOCK(b, 1);
#undef INT8_PAIR
#undef INT8_BLOCK
  // Zero terms: z per group times dx times its columns' code sum.
  const size_t groups = sixteen ? k / 16 : k / 32;
  for (size_t i = 0; i < weights; ++i) {
    const float* z = w[i].z;
    for (size_t t = 0; t < rows; ++t) {
      const float* sums_of = xs + t * (k / 16);
      __m256 zeros = _mm256_setzero_ps();
      size_t g = 0;
      for (; g + 8 <= groups; g += 8) {
        __m256 sums;
        if (sixteen) {
          sums = _mm256_loadu_ps(sums_of + g);
        } else {
          // Per 32 columns: pairs of xs added, hadd's lane order put back.
          const __m256 pairs = _mm256_hadd_ps(_mm256_loadu_ps(sums_of + 2 * g),
                                              _mm256_loadu_ps(sums_of + 2 * g + 8));
          sums = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xD8));
        }
        zeros = _mm256_fmadd_ps(_mm256_loadu_ps(z + g), sums, zeros);
      }
      const __m256 total = _mm256_add_ps(_mm256_add_ps(acc[i][t][0], acc[i][t][1]), zeros);
      __m128 h = _mm_add_ps(_mm256_castps256_ps128(total), _mm256_extractf128_ps(total, 1));
      h = _mm_add_ps(h, _mm_movehl_ps(h, h));
      float sum = _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
      for (; g < groups; ++g) {
        sum += z[g] * (sixteen ? sums_of[g] : sums_of[2 * g] + sums_of[2 * g + 1]);
      }
      w[i].out[t * out_stride] = sum;
    }
  }
}

// Most groups per weight row the one-row int8 product takes (its factors expanded on the stack).
#define INT8_ROW_MAX_GROUPS 2048

// Weight rows [first, last) times `rows` rows of x quantized in column order, into y [rows, n].
INLINE void int8_rows(const uint8_t* codes, struct Planes planes, const int8_t* qx, const float* xd,
                      const float* xs, float* y, size_t rows, size_t n, size_t k, int has_offsets,
                      enum CodeForm form, enum ScaleForm scale_form, size_t first, size_t last) {
  // The form's, a constant here.
  const size_t group = form_group(form), groups = k / group;
  const size_t row_bytes = code_row_bytes(form, k), high_bytes = high_row_bytes(form, k);
  const size_t ahead = prefetch_rows(1, 1, row_bytes, pairs_rows(form)) * row_bytes;
  const float bias = column_bias(form);
  // Each weight row's s and z: 16 floats past INT8_ROW_MAX_GROUPS so that no two of the arrays
  // start a multiple of 4 KiB apart (loads from one behind stores to another at such a distance
  // wait on them: Q6_K's product ran ~15% slower, AVX2, 16384 x 2048).
  float factors[2 * INT8_PAIR_ROWS][INT8_ROW_MAX_GROUPS + 16];
  size_t row = first;
  while (row < last) {
    // A pair of rows together where they go in pairs and one x row shares them.
    const size_t weights = rows == 1 && pairs_rows(form) && row % 2 == 0 && row + 1 < last ? 2 : 1;
    struct Int8Row w[INT8_PAIR_ROWS];
    for (size_t i = 0; i < weights; ++i) {
      float *s = factors[2 * i], *z = factors[2 * i + 1];
      const struct Planes p = planes_row(planes, row + i, groups, group, scale_form, high_bytes);
      expand_row_factors(p.scales, p.super_scales, groups, group, scale_form, s);
      if (has_offsets) {
        expand_row_factors(p.offsets, p.super_offsets, groups, group, scale_form, z);
      }
      for (size_t g = 0; g < groups; ++g) z[g] = (has_offsets ? z[g] : 0) - s[g] * bias;
      w[i] = (struct Int8Row){code_row(codes, row + i, row_bytes, pairs_rows(form)), p.high_bits, s,
                              z, y + row + i};
    }
    if (weights == 2) {
      int8_rows_times_few(w, 2, qx, xd, xs, k, form, ahead, 1, n);
      row += 2;
      continue;
    }
    for (size_t t = 0; t < rows; t += INT8_FEW_ROWS) {
      const size_t few = rows - t < INT8_FEW_ROWS ? rows - t : INT8_FEW_ROWS;
      const struct Int8Row these = {w[0].codes, w[0].highs, w[0].s, w[0].z, y + t * n + row};
      const int8_t* q = qx + t * k;
      const float *d = xd + t * (k / 32), *sums = xs + t * (k / 16);
      // Each count apart, a constant in its loop.
      switch (few) {
        case 1:
          int8_rows_times_few(&these, 1, q, d, sums, k, form, ahead, 1, n);
          break;
        case 2:
          int8_rows_times_few(&these, 1, q, d, sums, k, form, ahead, 2, n);
          break;
        case 3:
          int8_rows_times_few(&these, 1, q, d, sums, k, form, ahead, 3, n);
          break;
        default:
          int8_rows_times_few(&these, 1, q, d, sums, k, form, ahead, 4, n);
          break;
      }
    }
    ++row;
  }
}

// --math fast for few x rows: y [rows, n] = x (quantized in column order: qx, xd, xs as
// xlacel_quantize_int8_columns_workgroup lays them out) times weight rows [workgroup *
// rows_per_workgroup, +rows_per_workgroup), the weight's arguments as
// xlacel_planar_matmul_workgroup's. Each x row's sums are the same whatever rows go with it.
void xlacel_planar_matmul_int8_rows_workgroup(
    MEMREF(const uint8_t, codes), MEMREF(const uint8_t, highs), MEMREF(const void, scales),
    MEMREF(const void, offsets), MEMREF(const uint16_t, supers),
    MEMREF(const uint16_t, super_offsets), MEMREF(const int8_t, qx), MEMREF(float, y), size_t rows,
    size_t n, size_t k, size_t group, size_t has_offsets, size_t code_bits, ptrdiff_t code_bias,
    size_t e2m1_codes, size_t scale_bits, size_t paired_codes, size_t rows_per_workgroup,
    size_t workgroup) {
  UNUSED_MEMREF_FIELDS(codes), UNUSED_MEMREF_FIELDS(highs), UNUSED_MEMREF_FIELDS(scales);
  UNUSED_MEMREF_FIELDS(offsets), UNUSED_MEMREF_FIELDS(supers);
  UNUSED_MEMREF_FIELDS(super_offsets), UNUSED_MEMREF_FIELDS(qx), UNUSED_MEMREF_FIELDS(y);
  struct EntryWeight w;
  if (!ENTRY_WEIGHT(w)) return;
  if (k % 32 != 0 || k / group > INT8_ROW_MAX_GROUPS || w.first >= w.last) return;
  qx += qx_offset, y += y_offset;
  const float* xd = (const float*)(qx + rows * k);
  const float* xs = xd + rows * (k / 32);
  // Each form's loop apart, its form a constant (as SPECIALISE does for the exact product).
#define INT8_ROWS_CASE(FORM)                                                                      \
  case FORM:                                                                                      \
    int8_rows(w.codes, w.planes, qx, xd, xs, y, rows, n, k, has_offsets != 0, FORM, w.scale_form, \
              w.first, w.last);                                                                   \
    break;
  switch (w.form) {
    INT8_ROWS_CASE(BYTES_32)
    INT8_ROWS_CASE(NIBBLES_32)
    INT8_ROWS_CASE(NIBBLES_32_CENTRED)
    INT8_ROWS_CASE(NIBBLES_HIGH1_32)
    INT8_ROWS_CASE(NIBBLES_HIGH1_32_CENTRED)
    INT8_ROWS_CASE(NIBBLES_HIGH2_16_CENTRED)
    INT8_ROWS_CASE(NIBBLES_32_PAIRED)
    INT8_ROWS_CASE(NIBBLES_32_CENTRED_PAIRED)
    INT8_ROWS_CASE(NIBBLES_32_E2M1)
  }
#undef INT8_ROWS_CASE
}
