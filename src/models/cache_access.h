#pragma once
// How one graph call (graph_options.h) writes this call's K/V rows into a layer's KV cache and
// which keys its attention then reads.
//
// A cache of `capacity` rows per slot holds position p at row p. A ring (fewer rows: a sliding
// layer whose window is shorter than the capacity) holds position p at row p mod rows, so it
// keeps only the latest `rows` positions. Which position a ring row holds follows from the
// slot's position alone, with no host state: before position n is written, row r holds the
// latest q < n with q = r (mod rows), or nothing (q < 0). A write at n replaces position
// n - rows, which no query at n or later attends (a window of `rows` keys ends at n - rows + 1),
// so an idle decode row may write its slot's next position as it does for a full cache.
#include <cstdint>
#include <optional>
#include <vector>

#include "models/graph_options.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

// The keys attention reads of one layer after the call's write (AttentionInputs).
struct CacheRead {
  stablehlo::Value keys;  // [N, kv_heads, keys, head_dim]
  stablehlo::Value values;
  // i32 [N, keys]: the position each key holds, negative for none; absent: key i holds
  // position i.
  std::optional<stablehlo::Value> positions;
  // Where keys and values are the leading rows and sequences of whole caches (a decode of a full
  // cache): those caches, which a kernel can read in place instead of a copy of the window.
  std::optional<stablehlo::Value> whole_keys, whole_values;
};

// A layer's caches after the call, and what its attention reads.
struct CacheUpdate {
  stablehlo::Value k_cache, v_cache;
  CacheRead read;
};

// A short convolution's inputs around each of the call's rows (CacheAccess::recent_inputs).
struct RecentInputs {
  stablehlo::Value cache;  // the layer's cache after the call
  // f32 [T, taps, D]: for the row at position p, the inputs at p - taps + 1 .. p in order, zero
  // before position 0.
  stablehlo::Value window;
};

// One sequence's prefill chunk (i32 scalars): `bucket` tokens of slot `slot` at positions
// start .. start + bucket - 1, the first `valid_length` real.
struct PrefillChunkRows {
  stablehlo::Value slot, start, valid_length;
};

class CacheAccess {
 public:
  // Prefill: a chunk of each sequence, whose rows come in this order in the call's k and v. A
  // full cache takes every row below the capacity (padding rows are rewritten before they are
  // read); a ring takes only the real rows, the latest of them where there are more than it
  // holds, and attention reads the ring as it was before the chunk followed by the chunk's own
  // rows. With a `window` (0: none), attention reads only a full cache's rows [0, window), which
  // must hold start + bucket. Sequences write their own slots one after another; one with
  // valid_length 0 writes nothing (padding: over several sequences, rows past valid_length keep
  // what the slot held).
  static CacheAccess prefill(std::vector<PrefillChunkRows> chunks, int64_t bucket, int64_t window);
  // Decode: row b writes positions[b] (i32 [rows]) of slot b; attention reads slots
  // 0 .. rows - 1 and, of each, the rows [0, window) (0: all of them).
  static CacheAccess decode(stablehlo::Value positions, int64_t window);

  // k, v f32 [T, kv_heads, head_dim]: this call's rows. A cache with fewer rows than
  // `capacity` is a ring.
  CacheUpdate update(stablehlo::Value k_cache, stablehlo::Value v_cache, stablehlo::Value k,
                     stablehlo::Value v, int64_t capacity) const;
  // A recurrent layer's ring of its latest inputs (LFM2's short convolution): `cache`
  // [slots, 1, taps, D] holds position p's input at row p mod taps, as a ring of KV rows does,
  // so what a row holds follows from the slot's position alone, an idle decode row's write is
  // harmless and a slot may resume from its newest position; x f32 [T, D]: this call's inputs.
  RecentInputs recent_inputs(stablehlo::Value cache, stablehlo::Value x) const;
  // A recurrent state kept at two positions (Mamba-2's SSM state): `cache` [slots, 1, 2, S] holds
  // a slot's state after position p at row p mod 2, so a sequence resumes from its newest
  // position while an idle decode row, which writes its slot's next position, leaves it intact.
  // Each sequence's state before this call's rows: f32 [N, S] (the state after start - 1 (prefill)
  // or position - 1 (decode)), zero for a sequence that starts at position 0.
  stablehlo::Value state_before(stablehlo::Value cache) const;
  // `cache` with each sequence's state after its last real row, `after` f32 [N, S], written at
  // that position's row; a prefill sequence with no real rows (padding) writes nothing.
  stablehlo::Value store_state(stablehlo::Value cache, stablehlo::Value after) const;

 private:
  CacheAccess() = default;

  stablehlo::Value prefill_store(stablehlo::Value cache, const PrefillChunkRows& chunk,
                                 stablehlo::Value block) const;
  // A ring prefill's keys [R + T, Hkv, D]: the slot's ring rows, then the chunk's rows.
  stablehlo::Value attended_rows(stablehlo::Value cache, const PrefillChunkRows& chunk,
                                 stablehlo::Value rows_kvd) const;
  stablehlo::Value prefill_ring_store(stablehlo::Value cache, const PrefillChunkRows& chunk,
                                      stablehlo::Value attended) const;
  stablehlo::Value decode_store(stablehlo::Value cache, stablehlo::Value rows_kvd,
                                int64_t ring_rows) const;

  GraphKind kind_ = GraphKind::kDecode;
  std::vector<PrefillChunkRows> chunks_;  // prefill
  stablehlo::Value positions_;            // decode: i32 [rows]
  int64_t tokens_ = 0;                    // prefill: the bucket (per sequence); decode: the rows
  int64_t window_ = 0;                    // rows attended (0: all)
};

}  // namespace xlacel::models
