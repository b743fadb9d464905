#pragma once
// Continuous batching over a ModelRunner (executor/model_runner.h) whose KV cache holds several
// sequences (slots). Requests are submitted at any time and wait in FIFO order; each step():
//   1. applies cancellations and gives free slots to waiting requests: the free slot whose
//      resident tokens share the longest prefix with the prompt (prefix reuse), else the lowest
//      free slot, so running sequences stay packed at the low slots and decode batches small;
//   2. runs one prefill call: the next chunk of the oldest request still prefilling, so a long
//      prompt is interleaved with decode steps and running streams keep flowing; where several
//      requests are prefilling and the runner takes several sequences per call
//      (Capabilities::prefill_sequences), chunks of the smallest bucket of the oldest ones
//      instead, so a burst of prompts advances together and its short prompts get their first
//      tokens early (where that fills the call, or some prompt is a small chunk from its first
//      token: a few long prompts take full chunks in turn);
//   3. with speculative decoding (SchedulerOptions::speculation), where some greedy sequence
//      (device argmax, no logits on the host) has drafted tokens, every sequence with a token
//      to feed is such a one and fits one verify call (Capabilities::verify_sequences), and the
//      tokens the call is expected to give (each sequence's recent acceptance) come sooner than
//      decode steps would give them (the recent times of both: speculation.h), runs one verify
//      call instead of the decode step: each sequence's newest token and its
//      drafts (none for the others), keeping the drafts up to the first that differs from the
//      argmax before it and one token more, the same tokens decode would give (speculation.h);
//      else
//   3. runs one decode step over every slot that has a token to feed (rows 0 .. highest such
//      slot, rounded up to a compiled batch size; idle rows write a cache row no one reads). A
//      request whose prompt has only its last token left to run (a one-token prompt, or a
//      repeated one after prefix reuse) and whose tokens come from the device's argmax (no
//      logits on the host) feeds it here instead of in a prefill call, so a burst of such
//      requests gets its first tokens from one decode step.
// A finished or cancelled request frees its slot at once, and the slot keeps its resident
// tokens: the prompt and fed outputs whose K/V rows are written. A later prompt that starts with
// them is prefilled from where they end (at most up to its last token, whose logits are needed;
// with sliding-window rings, only where prefix_reuse.h allows), so a chat's next turn prefills
// only what is new. The choices of one request (submit_choices) share their prompt: the first
// prefills it, and each other one holding a slot by then takes a copy of that slot's rows
// (ModelRunner::copy_slot) and draws its first token from the same logits, so n choices cost
// one prefill. An embedding request (RequestOptions::embed) runs its prompt through the embed
// graph from position 0, its chunks chosen by the prefill rule (with other embeddings' chunks,
// not generations'), and ends with one event carrying the pooled vector. Each request has its own
// sampler (and seed), EOS ids, token budget and stop strings, so its tokens do not depend on what
// else is in the batch. submit() and cancel() may be called from any thread; step() from one thread
// at a time, and events are delivered on the thread that runs step().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/embedding.h"
#include "engine/prefill_plan.h"
#include "engine/prompt_cache.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/slot_action.h"
#include "engine/speculation.h"
#include "engine/stop_strings.h"
#include "executor/model_runner.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::engine {

// What one step() did, for benchmarks and metrics.
struct StepReport {
  int64_t prefill_tokens = 0;     // valid tokens of the chunks run (0: none)
  int64_t prefill_sequences = 0;  // sequences whose chunks the step's prefill call ran
  double prefill_seconds = 0;
  int64_t decode_sequences = 0;  // sequences advanced by the decode step or verify call (0: none)
  int64_t decode_rows = 0;       // rows of the graph that ran (its batch size; verify: tokens)
  double decode_seconds = 0;
  // A verify call ran instead of the decode step (drafted_tokens > 0): the tokens drafted, and
  // those that stood.
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
};

struct SchedulerOptions {
  // Start a prompt's prefill after the prefix its slot already holds (see above). Off: every
  // prompt is prefilled from position 0 (for comparisons and measurements).
  bool prefix_reuse = true;
  // The choices of one submit_choices() prefill their prompt once (see above). Off: each
  // prefills its own (for comparisons).
  bool share_choice_prompts = true;
  // A prompt's last token, when it is the only one left to run, goes through the decode step
  // (see above). Off: through a prefill call (for comparisons).
  bool last_prompt_token_in_decode = true;
  // Host RAM for the prompt cache (engine/prompt_cache.h); 0: none. With it, a free slot whose
  // resident tokens a new prompt would write over keeps them there first (when they are at least
  // prompt_cache_min_tokens), and a prompt that shares at least prompt_cache_min_tokens more
  // with an entry than with any free slot gets the entry restored into its slot instead of
  // prefilling that much.
  std::size_t prompt_cache_bytes = 0;
  int64_t prompt_cache_min_tokens = 32;
  // Speculative decoding of greedy requests (step 3 above): kNgram drafts by prompt lookup
  // (ngram_draft.h) up to draft_max tokens a step (and fewer than the runner's verify calls
  // take: Capabilities::verify_tokens, which must be 2 or more). The tokens are those decode
  // gives; only their speed changes.
  Speculation speculation = Speculation::kOff;
  int64_t draft_max = 3;
  // Verify drafts only where that is expected to pay (step 3). Off: whenever a draft comes (for
  // tests, whose fake runners take no time, and measurements).
  bool verify_when_it_pays = true;
  // Error naming the field when invalid.
  void validate() const;
};

class Scheduler {
 public:
  // `tokenizer` turns tokens into event text and is needed for stop strings; may be null.
  Scheduler(executor::ModelRunner& runner, const Tokenizer* tokenizer,
            const SchedulerOptions& options = {});
  ~Scheduler();

  // Queues a request and returns its id. Error naming the field, before anything is queued,
  // when the prompt is empty or cannot fit a slot's context, or the options are invalid.
  uint64_t submit(std::vector<int32_t> prompt, const RequestOptions& options,
                  EventCallback on_event);
  // Several requests on one prompt (the choices of one API request), queued together so they
  // are admitted together where slots are free, and prefilled once (see above): request i has
  // options[i] and the callback on_event(i). Every request is checked as submit() checks it
  // before any is queued.
  std::vector<uint64_t> submit_choices(const std::vector<int32_t>& prompt,
                                       std::span<const RequestOptions> options,
                                       const std::function<EventCallback(std::size_t)>& on_event);
  // Runs `action` on its slot at the start of the next step (on the stepping thread), and calls
  // `done` there with the result; a slot a request holds then is refused (kBusy). A restored
  // slot's tokens are reused by prompts that start with them, as a slot's own are. FieldError
  // "slot" when the action's slot is not one of the slots.
  void submit_slot_action(SlotAction action, std::function<void(const SlotActionResult&)> done);
  // Ends a waiting or running request at the next step (its slot is freed then); unknown or
  // finished ids are ignored.
  void cancel(uint64_t request);

  // One scheduling step (see above); returns false when there was nothing to do.
  bool step();
  // Steps until no request is waiting or running.
  void run_until_idle();

  bool idle() const;
  std::size_t waiting() const;
  std::size_t running() const;
  std::size_t slots() const { return static_cast<std::size_t>(caps_.slots); }
  const StepReport& last_step() const { return last_step_; }
  // Prompts that got their prefix from the prompt cache so far; its entries and bytes now.
  // Readable from any thread.
  int64_t prompt_cache_hits() const { return prompt_cache_hits_; }
  std::size_t prompt_cache_entries() const { return prompt_cache_entries_; }
  std::size_t prompt_cache_bytes() const { return prompt_cache_bytes_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Sequence;
  struct SharedPrompt;

  // Error naming the field unless a request's images and its prompt's image tokens agree: as
  // many image tokens as its images' features have rows, and no image token without images.
  void check_images(const std::vector<int32_t>& prompt, const RequestOptions& options) const;
  // How many of `tokens` are the image token.
  int64_t prompt_image_tokens(std::span<const int32_t> tokens) const;
  // `chunk` ended before a run of image tokens it would cut, where the runner needs each run in
  // one chunk (Capabilities::image_runs_whole): no row at all when the run starts the chunk.
  PrefillChunk whole_image_runs(const Sequence& sequence, PrefillChunk chunk) const;
  // The features of the sequence's images whose rows it does not hold yet (the rows of the rest
  // stay zero: no chunk reads them).
  void encode_images(Sequence& sequence);
  // What each of the sequence's prompt rows holds, as prefix reuse and the prompt cache compare
  // them: its token, or for an image token a negative id naming the image (by its pixels) and the
  // row in it, so that rows of different images never match.
  std::vector<int32_t> prompt_rows(const Sequence& sequence);
  // A prefill chunk's image embeddings (executor::PrefillInput::image_embeddings): `bucket` rows,
  // the sequence's image features at its image tokens; empty where it has none.
  std::vector<float> chunk_image_embeddings(const Sequence& sequence, const PrefillChunk& chunk,
                                            std::size_t bucket) const;
  // Error naming the field unless the request can be queued (see submit()).
  void check_request(const std::vector<int32_t>& prompt, const RequestOptions& options) const;

  void run_slot_actions();
  void admit();
  // The free slot for `prompt` and how many of its leading tokens that slot holds already.
  std::pair<std::size_t, int64_t> choose_slot(const std::vector<int32_t>& prompt) const;
  // With a prompt cache: keeps the free `slot`'s tokens there before `prompt` (sharing `common`
  // of them) writes over them, and restores an entry into the slot where it gives more; returns
  // how many of the prompt's tokens the slot holds then (`may_restore` false: keeps only).
  int64_t use_prompt_cache(std::size_t slot, const std::vector<int32_t>& prompt, int64_t common,
                           bool may_restore);
  void prefill_some();
  // Runs the next chunk (of at most chunk_tokens) of each embedding request in `batch`'s slots
  // in one call; after a request's last, sends its embedding.
  void embed_some(std::span<const std::size_t> batch, int64_t chunk_tokens);
  // Whether the decode step feeds the sequence's last prompt token (SchedulerOptions).
  bool rides_decode(const Sequence& sequence) const;
  // Marks when the sequence's prompt started running (once).
  void begin_prefill(Sequence& sequence, Clock::time_point now);
  // The slots of the choices that hold one and wait for `leader` to prefill their prompt.
  std::vector<std::size_t> waiting_on(const Sequence& leader) const;
  // After `leader`'s last prefill chunk in `slot`: the choices in `sharing` (waiting_on before
  // the chunk ran) take a copy of its rows and their first token from `out`, its result.
  void share_prompt(Sequence& leader, int32_t slot, std::span<const std::size_t> sharing,
                    const executor::PrefillOutput& out);
  void decode_all();
  // Step 3's verify call, where it applies (see above); false when the decode step runs instead.
  bool verify_drafts();
  // The tokens `sequence` guesses come after its newest one (none: it feeds that one alone).
  std::vector<int32_t> draft_for(Sequence& sequence);
  // After a verify call that began at `start`: `sequence` fed its token and `draft`, and `next`
  // is the argmax after each; keeps the drafts that stand, emits the tokens they give and
  // returns how many drafts stood (were fed before the sequence ended).
  int64_t accept_verified(Sequence& sequence, std::span<const int32_t> draft,
                          std::span<const int32_t> next, Clock::time_point start);
  // Whether a decode step or verify call feeds the sequence a token (its newest output, or its
  // prompt's last token: rides_decode), and which.
  bool feeds_token(const Sequence& sequence) const;
  int32_t token_to_feed(const Sequence& sequence) const;
  // After a call that began at `start` wrote the rows of the token it fed the sequence.
  void token_fed(Sequence& sequence, Clock::time_point start);
  // After a new token: emits it and finishes the sequence when a stop condition holds.
  void accept_token(Sequence& sequence, int32_t token,
                    std::optional<TokenLogprobs> logprobs = std::nullopt);
  // Draws the sequence's next token from `logits` and accepts it (with its logprobs when asked).
  void sample_and_accept(Sequence& sequence, std::span<float> logits);
  // Ends a sequence without a new token (cancelled).
  void finish(Sequence& sequence, FinishReason reason);
  // Sends `event` as the sequence's last one.
  void emit_last(Sequence& sequence, TokenEvent event, FinishReason reason);
  void release_finished();
  // After a runner call threw: no slot's cache rows are trusted for reuse any more.
  void forget_resident();

  executor::ModelRunner& runner_;
  const Tokenizer* tokenizer_;
  executor::Capabilities caps_;
  SchedulerOptions options_;

  // Guards waiting_, cancelled_, slot_actions_ and next_id_ (submit/cancel threads).
  mutable std::mutex mutex_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::unordered_set<uint64_t> cancelled_;
  std::deque<std::pair<SlotAction, std::function<void(const SlotActionResult&)>>> slot_actions_;
  uint64_t next_id_ = 1;

  std::vector<std::unique_ptr<Sequence>> slots_;  // [slots]; null = free (step thread only)
  // [slots]: of a free slot, the tokens whose K/V rows it holds at positions 0.. (an occupied
  // slot's are its sequence's tokens[0, cached)).
  std::vector<std::vector<int32_t>> resident_;
  // The images seen so far by their pixels' hash, each numbered once: prompt_rows' image ids.
  std::unordered_map<std::size_t, int32_t> image_ids_;
  std::atomic<std::size_t> running_ = 0;  // occupied slots, readable from any thread
  uint64_t admitted_ = 0;                 // admissions so far: prefill goes oldest first
  StepReport last_step_;
  std::vector<executor::PrefillOutput> prefill_outs_;
  std::vector<std::vector<float>> hidden_;     // each embed chunk's hidden states
  std::unique_ptr<PromptCache> prompt_cache_;  // step thread only; null without one
  std::atomic<int64_t> prompt_cache_hits_ = 0;
  std::atomic<std::size_t> prompt_cache_entries_ = 0;
  std::atomic<std::size_t> prompt_cache_bytes_ = 0;
  executor::DecodeOutput decode_out_;
  StepCosts costs_;  // speculative decoding: what decode steps and verify calls take
};

}  // namespace xlacel::engine
