#pragma once
// Which graph to emit for a model. This header is the contract between the model graphs
// (src/models), the executor (src/executor) and the CLI: one module per graph, its entry
// function public and named "main" (what XLA requires; IREE calls it as module.main). The
// argument and result lists of each graph are its GraphSignature (models/graph_signature.h).
//
// The KV cache holds `slots` sequences, each with `capacity` positions: one cache tensor per
// layer and per K/V, [slots, kv_heads, capacity, head_dim], except that a sliding layer whose
// window is shorter keeps only the window, a ring holding position p at row p mod window (see
// Architecture::cache_specs, models/cache_access.h).
//
//   prefill        one slot's prompt chunk: tokens i32[bucket], slot i32[], start i32[],
//                  valid_length i32[]  ->  next_token i32[], logits f32[vocab], caches...
//                  Runs tokens [0, valid_length) at positions start + i (the rest is padding),
//                  writes the K/V rows of slot `slot` from `start` and touches no other slot.
//                  The caller keeps start + valid_length <= capacity; padding rows past the
//                  capacity, and every padding row of a ring, are left out, and the others are
//                  never read before being overwritten (a query at p reads keys <= p).
//                  With `sequences` S above 1, one call prefills a chunk of each of S
//                  sequences, each as above in its own slot; one with valid_length 0 writes
//                  nothing (padding: it may name any slot, its results are to be ignored).
//                  Every input and output gains a leading
//                  dimension S (tokens i32[S, bucket], slot/start/valid_length i32[S],
//                  next_token i32[S], logits f32[S, vocab]), and row s's results do not
//                  depend on the other sequences.
//   verify         as a prefill (one sequence or S), but returns next_tokens i32[bucket]
//                  ([S, bucket]): the argmax after every row, valid or not (those past
//                  valid_length are to be ignored). Speculative decoding feeds a sequence's newest
//                  token and the tokens drafted after it, and keeps the drafts up to the first
//                  that differs from the argmax before it (engine/scheduler.h); rows past that
//                  stay written, beyond the sequence's length, rewritten before any query reads
//                  them (not in a ring: the caller keeps a ring's rows from wrapping).
//   decode         one token for each of slots 0 .. bucket-1 (ragged): tokens i32[bucket],
//                  positions i32[bucket]  ->  next_tokens i32[bucket] (argmax, ties to the
//                  lower id), caches...  Row b writes its K/V at positions[b] of slot b and
//                  attends to keys 0 .. positions[b] of slot b; slots >= bucket are untouched.
//                  With a `window`, attention reads only cache rows [0, window) of each slot
//                  (every position must be below it): the same result, a fraction of the
//                  reads and scores for short sequences.
//                  A row with no sequence to advance passes a position whose cache row is free
//                  (its slot's next unwritten one; in a ring that row holds a position no later
//                  query attends) and its result is ignored.
//   decode-logits  as decode, but returns logits f32[bucket, vocab] (host-side sampling).
//   embed          as a prefill, but returns hidden f32[bucket, hidden] ([S, bucket, hidden]
//                  over S sequences): every row's final hidden state after the final norm (what
//                  transformers' base model returns as last_hidden_state), for embeddings
//                  pooled on the host; rows past valid_length are padding. No logits: the head
//                  is not run.
//   copy-slot      from i32[], to i32[]  ->  caches...  Slot `to` of every cache takes slot
//                  `from`'s rows (all of them: a ring's row order follows from positions alone),
//                  so it holds the tokens `from` holds; no other slot changes. The choices of
//                  one request share their prompt's prefill this way (engine/scheduler.h).
//   save-slot      slot i32[]  ->  <cache>_rows..., caches...  Every cache's rows of one slot
//                  ([1, ...] each; the caches are returned unchanged), for the host's prompt
//                  cache (engine/prompt_cache.h). With a `window`, a full-length KV cache gives
//                  only its rows of positions [0, window) (slot_copy_graph.h).
//   restore-slot   slot i32[], <cache>_rows...  ->  caches...  The slot takes those rows (as
//                  save-slot gave them), so it holds what the saved slot held.
//
// Every cache argument is aliased (tf.aliasing_output) to the result carrying its new value, so
// runtimes update the cache in place.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lowering/lowering.h"
#include "model_files/model_config.h"

namespace xlacel::models {

enum class GraphKind {
  kPrefill,       // a bucket of one slot's prompt tokens written into its KV cache at an offset
  kDecode,        // one token per slot -> next token ids by on-device argmax
  kDecodeLogits,  // one token per slot -> logits, for host-side sampling
  kCopySlot,      // one slot's KV-cache rows copied into another (no weights)
  kSaveSlot,      // one slot's rows of every cache out to the host (no weights)
  kRestoreSlot,   // one slot's rows of every cache in from the host (no weights)
  kEmbed,         // a prefill chunk whose result is its rows' final hidden states (embeddings)
  kVerify,        // a prefill chunk whose result is every row's argmax (speculative decoding)
};
// The graphs that run a chunk of one slot's tokens into its caches: prefill, embed and verify.
bool prefills(GraphKind kind);
// The graphs that move whole slots, which read the caches only (slot_copy_graph.h).
bool moves_slots(GraphKind kind);
// f32/bf16/f16: every weight (and the KV cache) converted to that type at load. kAuto: each weight
// stays in the format its file stores (resident_weight.h): GGML block formats as planes of codes,
// scales and offsets, f16/bf16 narrow, f32 as is; the graph widens every weight to f32 where it
// uses it, so the arithmetic is HF's float32 on the values transformers dequantizes. KV cache f32.
enum class WeightType { kF32, kBF16, kF16, kAuto };

struct GraphOptions {
  GraphKind kind = GraphKind::kDecode;
  int64_t bucket = 1;      // prefill: tokens per call; decode: rows (slots 0 .. bucket-1)
  int64_t capacity = 512;  // KV-cache positions per slot
  WeightType weights = WeightType::kF32;
  int64_t slots = 1;  // sequences the KV cache holds (decode: bucket <= slots)
  // Cache rows attended per slot, [0, window); 0: all `capacity` of them. Sliding layers' rings
  // are read whole. A prefill chunk's rows must lie below its window. save-slot and
  // restore-slot: the rows they move of each full-length KV cache.
  int64_t window = 0;
  // Prefill, embed and verify: sequences per call, each with its own slot and chunk (see above); 1
  // for the others.
  int64_t sequences = 1;
  // The runtime's lowering (lowering/lowering.h), asked which product and attention the graph
  // runs and whether 4-bit codes come in row pairs (below); nullptr: the portable one. With
  // `math`, not part of the graph's name: an executor emits every graph with one of each.
  const lowering::Lowering* lowering = nullptr;
  lowering::Math math = lowering::Math::kExact;
  // Devices the graph is partitioned over (models/tensor_parallel.h): above 1, its arguments and
  // results carry sdy.sharding attributes over a mesh axis "tp" of this size.
  int64_t tensor_parallel = 1;

  // What the lowering gives this graph: the hand-written product for weights kept as the file
  // stores them (kAuto only; nullptr: the graph's own StableHLO product), the hand-written
  // attention, used where it takes the attention (plain causal mask, f32 cache), and whether
  // 4-bit codes are kept in row pairs (resident_weight.h, paired_nibble_specs: a property of the
  // resident weights, the same for every graph of an executor and for its loader; it changes
  // argument names, not the graph's name).
  const lowering::PlanarKernel* planar_kernel() const;
  const lowering::AttentionKernel* attention_kernel() const;
  bool paired_nibbles() const;
};

const char* graph_kind_name(GraphKind kind);  // "prefill", "decode", "decode-logits", ...
std::optional<GraphKind> parse_graph_kind(std::string_view name);
const char* weight_type_name(WeightType type);  // "f32", "bf16", "f16", "auto"
std::optional<WeightType> parse_weight_type(std::string_view name);

// A short name for the graph, e.g. "decode-b8-s8-c512-f32" ("decode-b8-s8-c512-w128-f32" with a
// window, "...-f32-tp2" partitioned over 2 devices, "prefill-b16x4-..." over 4 sequences).
std::string graph_name(const GraphOptions& options);
// The emitted module's name ("xlacel_decode_logits"), which IREE uses to name the module.
std::string module_name(GraphKind kind);

}  // namespace xlacel::models
