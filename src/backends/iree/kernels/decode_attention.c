// Attention of each query token over its sequence's keys (decode's one token per sequence, and
// each token of a prefill chunk), linked into IREE's llvm-cpu executables as an external object
// like planar_matmul.c. The graph's StableHLO attention (models/llama_layers.cpp) is the
// reference this is tested against: the same steps in f32 — scores q.k times the scale, their
// maximum, exp(score - max), their sum, each exp divided by the sum, then the probabilities
// times the values — only summed in another order. This exists because llvm-cpu streams the keys
// of a GQA group at a fraction of what a pass over them can read, and attends over the whole
// window (docs/PERFORMANCE.md, "Decode attention kernel").
//
// One workgroup per (sequence, kv head, token): it reads that head's keys visible to the token
// once for all the query heads that share them, and their values once: a decode's attention
// takes far less time per layer than llvm-cpu's q.k, softmax and p.v, and a decode after a long
// prompt gets faster (docs/PERFORMANCE.md, "Decode attention kernel"). Reading the keys from memory
// is what it waits on: a version that took each query head's 16-key blocks in turn (the block
// from the first-level cache for the others) ran faster in cache and slower from memory, its
// reads bunched apart from its arithmetic. A prefill chunk's tokens read the same keys one after
// another, from the second-level cache, and skip the keys past their own, which speeds up long
// prefills (docs/PERFORMANCE.md, "Prefill chunks through the attention kernel").
//
// A second entry point splits a decode's keys (xlacel_decode_attention_parts_workgroup): with
// fewer kv heads than workers, or a number they cannot share evenly (SmolLM2's 3 on 2 threads),
// one workgroup per kv head leaves a worker idle for a head's time, which at long contexts is
// most of a decode step. Each part returns its sums relative to its own maximum score, and the
// graph combines them (backends/iree/iree_attention_kernel.cpp).
//
// Freestanding: IREE embeds this in a library with no libc, no globals and no TLS.
#include "kernel_vectors.h"

#if LANES == 16
INLINE vec vec_round(vec x) {
  return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// x * 2^n for integral n.
INLINE vec vec_scale2(vec x, vec n) {
  return _mm512_scalef_ps(x, n);
}
#else
INLINE vec vec_round(vec x) {
  return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// x * 2^n for integral n >= -126 (exp_nonpositive clamps its argument so).
INLINE vec vec_scale2(vec x, vec n) {
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(x, _mm256_castsi256_ps(bits));
}
#endif

// exp(x) for x <= 0 (a score less the maximum), to ~1 ulp: x = n ln 2 + r with |r| <= ln 2 / 2
// (ln 2 in two parts, so r is exact), e^r by Cephes' minimax polynomial, times 2^n. Below
// -87.3 (where e^x leaves the normal floats) the result is 0 or a denormal either way; the
// clamp keeps 2^n representable.
INLINE vec exp_nonpositive(vec x) {
  x = vec_max(x, vec_broadcast(-87.33654475f));
  const vec n = vec_round(vec_mul(x, vec_broadcast(1.44269504088896341f)));
  vec r = vec_fnmadd(n, vec_broadcast(0.693359375f), x);
  r = vec_fnmadd(n, vec_broadcast(-2.12194440e-4f), r);
  vec p = vec_broadcast(1.9875691500e-4f);
  p = vec_fmadd(p, r, vec_broadcast(1.3981999507e-3f));
  p = vec_fmadd(p, r, vec_broadcast(8.3334519073e-3f));
  p = vec_fmadd(p, r, vec_broadcast(4.1665795894e-2f));
  p = vec_fmadd(p, r, vec_broadcast(1.6666665459e-1f));
  p = vec_fmadd(p, r, vec_broadcast(5.0000001201e-1f));
  p = vec_fmadd(p, vec_mul(r, r), vec_add(r, vec_broadcast(1.0f)));
  return vec_scale2(p, n);
}

#if LANES == 16
// The lane sums of 16 vectors as one: lane i holds the sum of v[i]'s 16 lanes. Pairs of vectors
// are added lane against lane after interleaving, halving the lanes per vector at each step (45
// operations, where 16 separate sums take ~130).
INLINE vec sum16(const vec v[16]) {
  vec t[8], w[4];
  for (size_t i = 0; i < 8; ++i) {
    // Per 128-bit block: v[2i]'s lanes 0+2 and 1+3, v[2i+1]'s likewise, interleaved.
    t[i] = vec_add(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                   _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  for (size_t i = 0; i < 4; ++i) {
    // Per 128-bit block: the block's sum of v[4i], v[4i+1], v[4i+2] and v[4i+3].
    const __m512d a = _mm512_castps_pd(t[2 * i]), b = _mm512_castps_pd(t[2 * i + 1]);
    w[i] = vec_add(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                   _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Across the four blocks: block m of the result holds w[m]'s blocks summed.
  const vec s01 = vec_add(_mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const vec s23 = vec_add(_mm512_shuffle_f32x4(w[2], w[3], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_f32x4(w[2], w[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return vec_add(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                 _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

// How many key (and value) rows ahead of the one in hand are prefetched: 16, one block of
// scores (4 KiB at head_dim 64); 48 measured slower (docs/PERFORMANCE.md, "PREFETCH_ROWS").
#define PREFETCH_ROWS 16

// Most vectors a head spans (head_dim 256 with 8 lanes).
#define MAX_HEAD_VECTORS 32
// Query heads whose p.v accumulators a pass over the values keeps in registers.
#define HEADS_PER_PASS 4

// Scores of `count` keys for each of `group` query heads (q [group, d], keys [count, d]), times
// `scale`, into out[g * stride + c].
INLINE void scores(const float* q, const float* keys, size_t count, size_t group, size_t d,
                   float scale, float* out, size_t stride) {
  const size_t vectors = d / LANES;
  size_t first = 0;
#if LANES == 16
  // Scores of 16 keys at a time, their lane sums taken together (sum16). Each key is read once
  // for up to HEADS_PER_PASS query heads (their partial sums wait in the first-level cache), so
  // that reading the keys from memory interleaves with the arithmetic; the next block's keys are
  // prefetched as this block's are read.
  for (; first + 16 <= count; first += 16) {
    for (size_t g0 = 0; g0 < group; g0 += HEADS_PER_PASS) {
      const size_t heads = group - g0 < HEADS_PER_PASS ? group - g0 : HEADS_PER_PASS;
      vec partial[HEADS_PER_PASS][16];
      for (size_t i = 0; i < 16; ++i) {
        const float* key = keys + (first + i) * d;
        if (g0 == 0) {
          for (size_t line = 0; line < d * 4; line += 64) {
            _mm_prefetch((const char*)(key + PREFETCH_ROWS * d) + line, _MM_HINT_T0);
          }
        }
        for (size_t h = 0; h < heads; ++h) {
          const float* qg = q + (g0 + h) * d;
          vec acc = vec_mul(vec_load(qg), vec_load(key));
          for (size_t v = 1; v < vectors; ++v) {
            acc = vec_fmadd(vec_load(qg + v * LANES), vec_load(key + v * LANES), acc);
          }
          partial[h][i] = acc;
        }
      }
      for (size_t h = 0; h < heads; ++h) {
        vec_store(out + (g0 + h) * stride + first,
                  vec_mul(sum16(partial[h]), vec_broadcast(scale)));
      }
    }
  }
#endif
  // The rest one key at a time for every query head: the key is read once.
  for (size_t c = first; c < count; ++c) {
    const float* key = keys + c * d;
    for (size_t g = 0; g < group; ++g) {
      const float* qg = q + g * d;
      vec acc = vec_mul(vec_load(qg), vec_load(key));
      for (size_t v = 1; v < vectors; ++v) {
        acc = vec_fmadd(vec_load(qg + v * LANES), vec_load(key + v * LANES), acc);
      }
      out[g * stride + c] = vec_sum(acc) * scale;
    }
  }
}

// One query head's `count` scores in place: exp(s - max) and their sum, then (normalize) each
// divided by the sum. The maximum and the sum go to *max_out and *sum_out.
INLINE void softmax(float* s, size_t count, int normalize, float* max_out, float* sum_out) {
  size_t c = 0;
  vec m = vec_broadcast(s[0]);
  for (; c + LANES <= count; c += LANES) m = vec_max(m, vec_load(s + c));
  float max = vec_hmax(m);
  for (; c < count; ++c) max = s[c] > max ? s[c] : max;
  const vec mv = vec_broadcast(max);
  vec total = vec_zero();
  for (c = 0; c + LANES <= count; c += LANES) {
    const vec e = exp_nonpositive(vec_sub(vec_load(s + c), mv));
    vec_store(s + c, e);
    total = vec_add(total, e);
  }
  float sum = vec_sum(total);
  for (; c < count; ++c) {
    // The tail through a vector too, so that every exp is the same function.
    float lane[LANES] __attribute__((aligned(64)));
    vec_store(lane, exp_nonpositive(vec_broadcast(s[c] - max)));
    s[c] = lane[0];
    sum += lane[0];
  }
  if (normalize) {
    const vec sv = vec_broadcast(sum);
    for (c = 0; c + LANES <= count; c += LANES) vec_store(s + c, vec_div(vec_load(s + c), sv));
    for (; c < count; ++c) s[c] = s[c] / sum;
  }
  *max_out = max, *sum_out = sum;
}

// Each query head's weights (out[g * stride + c], `count` of them) times the values [count, d]
// into out[g * stride + at ...], HEADS_PER_PASS query heads per pass over the values.
INLINE void times_values(const float* values, size_t count, size_t group, size_t d, float* out,
                         size_t stride, size_t at) {
  const size_t vectors = d / LANES;
  for (size_t g0 = 0; g0 < group; g0 += HEADS_PER_PASS) {
    const size_t heads = group - g0 < HEADS_PER_PASS ? group - g0 : HEADS_PER_PASS;
    for (size_t v0 = 0; v0 < vectors; v0 += 4) {
      const size_t span = vectors - v0 < 4 ? vectors - v0 : 4;
      vec acc[HEADS_PER_PASS][4];
      for (size_t h = 0; h < heads; ++h) {
        for (size_t v = 0; v < span; ++v) acc[h][v] = vec_zero();
      }
      for (size_t c = 0; c < count; ++c) {
        const float* value = values + c * d + v0 * LANES;
        if (g0 == 0 && v0 == 0) {  // PREFETCH_ROWS ahead, as the scores' keys
          for (size_t line = 0; line < d * 4; line += 64) {
            _mm_prefetch((const char*)(value + PREFETCH_ROWS * d) + line, _MM_HINT_T0);
          }
        }
        for (size_t h = 0; h < heads; ++h) {
          const vec p = vec_broadcast(out[(g0 + h) * stride + c]);
          for (size_t v = 0; v < span; ++v) {
            acc[h][v] = vec_fmadd(p, vec_load(value + v * LANES), acc[h][v]);
          }
        }
      }
      for (size_t h = 0; h < heads; ++h) {
        for (size_t v = 0; v < span; ++v) {
          vec_store(out + (g0 + h) * stride + at + (v0 + v) * LANES, acc[h][v]);
        }
      }
    }
  }
}

// The attention of one (sequence, kv head, token): q [group, d] (the token's query heads that
// read this kv head), keys and values [capacity, d], `visible` keys from the first (0: none, which
// the graph turns into equal weights over all `capacity`, as exp(lowest - lowest) = 1 gives).
// Writes each query head's probabilities [capacity] (the first `visible`) then its output [d] to
// out [group, capacity + d].
INLINE void attend(const float* q, const float* keys, const float* values, size_t visible,
                   size_t group, size_t capacity, size_t d, float scale, float* out) {
  const size_t stride = capacity + d;
  const size_t used = visible == 0 ? capacity : visible;
  if (visible == 0) {
    const float p = 1.0f / (float)capacity;
    for (size_t g = 0; g < group; ++g) {
      for (size_t c = 0; c < capacity; ++c) out[g * stride + c] = p;
    }
  } else {
    scores(q, keys, visible, group, d, scale, out, stride);
    for (size_t g = 0; g < group; ++g) {
      float max, sum;
      softmax(out + g * stride, visible, 1, &max, &sum);
    }
  }
  times_values(values, used, group, d, out, stride, capacity);
}

// Part of the attention of one (sequence, kv head) decode token: keys and values [count, d], from
// the part's first (`uniform`: the sequence sees none, so these count with equal weight). Writes
// each query head's weights [share] (its scratch) then [d] the values summed with weights
// exp(score - max), then that max and the weights' sum (max 0 and sum `count` where uniform;
// -FLT_MAX and 0 for no keys) to out [group, share + d + 2]. The graph combines the parts as
// softmax over all keys: each part's sums scaled by exp(max - the maximum over parts).
INLINE void attend_part(const float* q, const float* keys, const float* values, size_t count,
                        int uniform, size_t group, size_t share, size_t d, float scale,
                        float* out) {
  const size_t stride = share + d + 2;
  for (size_t g = 0; g < group; ++g) {
    float max = -3.40282347e38f, sum = 0.0f;
    if (uniform) {
      for (size_t c = 0; c < count; ++c) out[g * stride + c] = 1.0f;
      max = 0.0f, sum = (float)count;
    }
    out[g * stride + share + d] = max;
    out[g * stride + share + d + 1] = sum;
  }
  if (!uniform && count > 0) {
    scores(q, keys, count, group, d, scale, out, stride);
    for (size_t g = 0; g < group; ++g) {
      softmax(out + g * stride, count, 0, out + g * stride + share + d,
              out + g * stride + share + d + 1);
    }
  }
  times_values(values, count, group, d, out, stride, share);
}

// What both entry points take from their arguments: whether the kernel handles heads of d
// (a multiple of LANES, at most MAX_HEAD_VECTORS of them), the f32 scale from its bits, and the
// keys a sequence sees of `capacity` from its visible count (0: none).
INLINE int handles_head_dim(size_t d) {
  return d % LANES == 0 && d / LANES <= MAX_HEAD_VECTORS;
}
INLINE float scale_of(size_t scale_bits) {
  const uint32_t bits = (uint32_t)scale_bits;
  float scale;
  __builtin_memcpy(&scale, &bits, 4);
  return scale;
}
INLINE size_t keys_seen(int32_t count, size_t capacity) {
  return count <= 0 ? 0 : (size_t)count > capacity ? capacity : (size_t)count;
}

// CALL with D bound to d, a constant for the common head sizes (their loops' trip counts known).
#define WITH_HEAD_DIM(d, CALL) \
  do {                         \
    if ((d) == 64) {           \
      const size_t D = 64;     \
      CALL;                    \
    } else if ((d) == 128) {   \
      const size_t D = 128;    \
      CALL;                    \
    } else {                   \
      const size_t D = (d);    \
      CALL;                    \
    }                          \
  } while (0)

// q [n, kv_heads, tokens, group, d], keys and values [n', kv_heads, rows, d] (n' >= n, rows >=
// capacity: the attended keys are each head's first `capacity` rows, so a decode reads its window
// of the cache in place), visible i32 [n, tokens] (keys [0, visible) of the sequence count for
// the token; 0: none) -> out [n,
// kv_heads, tokens, group, capacity + d], for workgroup = (sequence * kv_heads + kv head) * tokens
// + token. `scale_bits`: the f32 scale's bits. d is a multiple of LANES, at most
// MAX_HEAD_VECTORS of them.
void xlacel_decode_attention_workgroup(MEMREF(const float, q), MEMREF(const float, keys),
                                       MEMREF(const float, values), MEMREF(const int32_t, visible),
                                       MEMREF(float, out), size_t kv_heads, size_t tokens,
                                       size_t group, size_t capacity, size_t rows, size_t d,
                                       size_t scale_bits, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(q), UNUSED_MEMREF_FIELDS(keys), UNUSED_MEMREF_FIELDS(values);
  UNUSED_MEMREF_FIELDS(visible), UNUSED_MEMREF_FIELDS(out);
  if (!handles_head_dim(d) || capacity == 0) return;
  const float scale = scale_of(scale_bits);
  const size_t head = workgroup / tokens;  // sequence * kv_heads + kv head
  const size_t token = workgroup % tokens;
  const size_t keys_visible =
      keys_seen(visible[visible_offset + head / kv_heads * tokens + token], capacity);
  const size_t cache = head * rows * d;
  q += q_offset + workgroup * group * d;
  keys += keys_offset + cache;
  values += values_offset + cache;
  out += out_offset + workgroup * group * (capacity + d);
  WITH_HEAD_DIM(d, attend(q, keys, values, keys_visible, group, capacity, D, scale, out));
}

// Decode (one token per sequence) with each (sequence, kv head)'s keys split into `parts`, so
// that kv heads fewer than (or not a multiple of) the runtime's workers still keep every worker
// busy: q [n, kv_heads, group, d], keys and values as above (each head's first `capacity` of
// `rows` rows), visible i32 [n]
// -> out [n, kv_heads, parts, group, share + d + 2] (attend_part), for workgroup = (sequence *
// kv_heads + kv head) * parts + part. Part p takes the visible keys [p * span, (p + 1) * span),
// span their count over parts rounded up to whole 16-key blocks (all `capacity` keys where none
// is visible); share >= every part's count.
void xlacel_decode_attention_parts_workgroup(MEMREF(const float, q), MEMREF(const float, keys),
                                             MEMREF(const float, values),
                                             MEMREF(const int32_t, visible), MEMREF(float, out),
                                             size_t kv_heads, size_t group, size_t capacity,
                                             size_t rows, size_t d, size_t scale_bits, size_t parts,
                                             size_t share, size_t workgroup) {
  UNUSED_MEMREF_FIELDS(q), UNUSED_MEMREF_FIELDS(keys), UNUSED_MEMREF_FIELDS(values);
  UNUSED_MEMREF_FIELDS(visible), UNUSED_MEMREF_FIELDS(out);
  if (!handles_head_dim(d) || capacity == 0 || parts == 0) return;
  const float scale = scale_of(scale_bits);
  const size_t head = workgroup / parts;  // sequence * kv_heads + kv head
  const size_t part = workgroup % parts;
  const size_t keys_visible = keys_seen(visible[visible_offset + head / kv_heads], capacity);
  const int uniform = keys_visible == 0;
  const size_t total = uniform ? capacity : keys_visible;
  const size_t span = ((total + parts - 1) / parts + 15) / 16 * 16;
  const size_t first = part * span < total ? part * span : total;
  size_t mine = total - first < span ? total - first : span;
  if (mine > share) mine = share;  // share covers every part's count; a guard, not a cut
  const size_t cache = head * rows * d + first * d;
  q += q_offset + head * group * d;
  keys += keys_offset + cache;
  values += values_offset + cache;
  out += out_offset + workgroup * group * (share + d + 2);
  WITH_HEAD_DIM(d, attend_part(q, keys, values, mine, uniform, group, share, D, scale, out));
}
