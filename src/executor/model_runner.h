#pragma once
// What the scheduler (src/engine) drives: a loaded model whose KV cache holds `slots`
// sequences. One graph call per method; the executor (executor.h) implements it over any
// runtime's device layer, and tests implement it with a fake model. Chunking, positions, slot
// assignment and sampling live above it, the same for every runtime.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xlacel::executor {

struct Capabilities {
  std::string runtime;   // "iree", "xla"
  std::string device;    // for people: "cpu (llvm-cpu for this CPU, IREE local-task, 2 threads)"
  int64_t slots = 1;     // sequences the KV cache holds
  int64_t capacity = 0;  // KV-cache positions per slot
  int64_t prefill_bucket = 0;  // tokens per prefill call, at most
  // Every compiled prefill bucket, ascending, the last prefill_bucket: a prefill call costs its
  // bucket whatever its valid tokens, so a short chunk takes the smallest that holds it.
  std::vector<int64_t> prefill_buckets;
  // Sequences whose chunks of the smallest bucket one prefill call can take (prefill_chunks);
  // 1: one per call. A short chunk costs about what the weights take to read, so a burst of
  // short prompts prefills together in about the time of one.
  int64_t prefill_sequences = 1;
  // The shortest ring among the caches: sliding layers (their window) and short convolutions
  // (their taps) keep only this many positions per slot, position p at row p mod ring_rows
  // (models/cache_access.h); 0: every layer keeps all `capacity`. Writing position n replaces
  // n - ring_rows, so a slot's rows stay reusable only up to its newest position.
  int64_t ring_rows = 0;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;  // floats per row of an embed chunk's hidden states
  // Speculative decoding (ModelRunner::verify): tokens of one sequence a verify call takes at
  // most (its bucket; 0: the runner has no verify graph), and sequences per call at most.
  int64_t verify_tokens = 0;
  int64_t verify_sequences = 0;
  // A vision-language model (ModelRunner::encode_images): the id of the image token, whose rows
  // a prefill chunk takes from the image features (PrefillInput::image_embeddings), and the
  // feature rows of one image; -1 and 0 for a text-only model.
  int32_t image_token_id = -1;
  int64_t image_tokens = 0;
  int64_t image_pixels = 0;  // floats of one image's pixel values (encode_images)
  // Each run of image tokens attends to itself whole (Gemma 3: models::attends_images_whole),
  // so a prefill chunk must hold whole runs: the prefill bucket holds an image's tokens.
  bool image_runs_whole = false;
};

// One slot's rows of every cache, as host bytes (ModelRunner::save_slot): of each cache that
// holds every position (a full-length KV cache) its rows of positions [0, positions), and all of
// the others (rings, recurrent state); positions 0: every row of every cache.
struct SlotRows {
  int64_t positions = 0;
  std::vector<std::vector<std::byte>> caches;
  std::size_t bytes() const;
};

// What a prefill chunk reads back.
struct PrefillOutput {
  int32_t token = -1;         // argmax of the logits (ties to the lower id)
  std::vector<float> logits;  // [vocab], filled only when asked for
};

// One sequence's chunk of a prefill call over several (ModelRunner::prefill_chunks).
struct PrefillInput {
  int32_t slot = 0;
  std::span<const int32_t> bucket_tokens;  // padded to the bucket
  int32_t start = 0;
  int32_t valid = 0;
  // A vision-language model's image features, bucket x hidden_size floats: row i is taken where
  // bucket_tokens[i] is the image token (Capabilities::image_token_id), ignored elsewhere.
  // Empty: the chunk has no image tokens.
  std::span<const float> image_embeddings;
};

// What a decode step reads back, one entry per row.
struct DecodeOutput {
  std::vector<int32_t> tokens;  // [rows]: argmax (device argmax, or of the logits read back)
  std::vector<float> logits;    // [rows * vocab], filled only when asked for
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual const Capabilities& capabilities() const = 0;

  // One prefill call into `slot`: `bucket_tokens` (exactly one of prefill_buckets ids, padded
  // by the caller) at positions start.. ; the first `valid` are real. Requires start + valid <=
  // capacity. Other slots are not touched.
  virtual void prefill_chunk(int32_t slot, std::span<const int32_t> bucket_tokens, int32_t start,
                             int32_t valid, bool want_logits, PrefillOutput& out) = 0;

  // Chunks of several sequences in one call, each as prefill_chunk would run it alone (the same
  // results): at most prefill_sequences of them, in distinct slots, each `bucket_tokens` the
  // smallest of prefill_buckets long. outs[i] is chunk i's (logits read back for every chunk
  // when asked). This default runs them one by one, for runners without such a graph.
  virtual void prefill_chunks(std::span<const PrefillInput> chunks, bool want_logits,
                              std::span<PrefillOutput> outs) {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      prefill_chunk(chunks[i].slot, chunks[i].bucket_tokens, chunks[i].start, chunks[i].valid,
                    want_logits, outs[i]);
    }
  }

  // The rows a decode step over slots 0 .. rows-1 runs: the smallest compiled batch size that
  // holds them (decode() takes exactly that many).
  virtual int64_t decode_rows(int64_t rows) const = 0;

  // One decode step over slots 0 .. n-1, n = tokens.size() = positions.size() = decode_rows(n):
  // row b feeds tokens[b] at positions[b] of slot b. A row with nothing to advance passes its
  // slot's next unwritten position (its result is ignored). Logits are read back only when asked.
  virtual void decode(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                      bool want_logits, DecodeOutput& out) = 0;

  // Chunks as prefill_chunks runs them (one of any bucket, or several of the smallest; the same
  // cache rows written), but read back as their rows' final hidden states after the final norm,
  // for embeddings: hidden[i] gets chunk i's valid x hidden_size floats, row by row. This
  // default: Error (a runner without the embed graph).
  virtual void embed_chunks(std::span<const PrefillInput> chunks,
                            std::span<std::vector<float>> hidden);

  // Speculative decoding's check: each chunk's tokens (a sequence's newest token, then the
  // tokens drafted after it; `bucket_tokens` verify_tokens long, padded) run as a prefill chunk
  // would run them, their K/V rows written from `start`, and next[i] gets chunk i's argmax after
  // each of its `valid` tokens (ties to the lower id), all in one call: at most verify_sequences
  // chunks, in distinct slots. The rows of drafts the caller then rejects stay written past the
  // sequence's length, where the next tokens' rows replace them before any query reads them.
  // This default: Error (a runner without the verify graph).
  virtual void verify(std::span<const PrefillInput> chunks, std::span<std::vector<int32_t>> next);

  // A vision-language model's image features: `pixel_values` holds whole images as its image
  // processor gives them (each channels x size x size), and the result image_tokens rows of
  // hidden_size floats per image, in order, for the image tokens of a prompt
  // (PrefillInput::image_embeddings). This default: Error (a text-only model).
  virtual std::vector<float> encode_images(std::span<const float> pixel_values);

  // Slot `to` takes every KV-cache row of slot `from` (from != to), so it holds the positions
  // `from` has written; no other slot changes. One prefill then serves several sequences.
  virtual void copy_slot(int32_t from, int32_t to) = 0;

  // Every cache's rows of `slot` (KV rows and recurrent state alike) that hold its positions
  // [0, positions) (0: all rows; a runner may give more rows than asked), as host bytes, one
  // entry per cache: what restore_slot() takes back. The host's prompt cache keeps a slot's
  // prompt this way after the slot goes to another (engine/prompt_cache.h). This default: Error.
  virtual SlotRows save_slot(int32_t slot, int64_t positions);
  // `slot` takes rows save_slot() gave (of this runner), so it holds the positions they hold as
  // that slot held them (its rows past them keep what they had: no query reads them before they
  // are written).
  virtual void restore_slot(int32_t slot, const SlotRows& rows);
};

}  // namespace xlacel::executor
