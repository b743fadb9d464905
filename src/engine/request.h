#pragma once
// What a caller asks of the scheduler for one sequence, and what it hears back.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "grammar/grammar_matcher.h"
#include "model_files/model_config.h"

namespace xlacel::engine {

struct RequestOptions {
  SamplingOptions sampling;
  int64_t max_tokens = 128;       // new tokens at most (>= 1)
  std::vector<int32_t> eos_ids;   // any of these ends the request (kept in the output)
  std::vector<std::string> stop;  // stop strings: the text ends before the first one found
  // Constrains the output to a grammar (grammar/grammar_compiler.h; null: none): each token is
  // drawn from those the grammar allows next, an end-of-sequence id only where it is complete.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // An embedding request: the prompt runs through the embed graph and its final hidden states
  // are pooled so (engine/embedding.h); no token is generated, and the one event carries the
  // pooled vector. The other options are not used.
  std::optional<Pooling> embed;
  // A vision-language model's images (executor::ModelRunner::encode_images): their pixel values
  // as its image processor gives them, whole images (Capabilities::image_pixels floats each) in
  // the order of the prompt's image tokens, image_tokens of them per image. Null: none.
  std::shared_ptr<const std::vector<float>> image_pixels;
};

enum class FinishReason {
  kEos,        // an end-of-sequence id
  kStop,       // a stop string
  kLength,     // max_tokens
  kCapacity,   // the slot's KV cache is full
  kCancelled,  // cancel()
  kGrammar,    // the grammar is complete and nothing may follow (a request without eos_ids), or
               // it allows no token at all (then `message` says so)
  kEmbedded,   // an embedding request's prompt has run (RequestOptions::embed)
};
const char* finish_reason_name(FinishReason reason);  // "eos", "stop", "length", ...

// Timings of one request, complete in its last event.
struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of those, how many were in the slot's KV cache (not prefilled)
  int64_t output_tokens = 0;
  double queued_seconds = 0;   // submit -> its first prefill chunk
  double prefill_seconds = 0;  // first prefill chunk -> first new token known
  double decode_seconds = 0;   // first token -> last token (the steps it took part in)
  int64_t decode_steps = 0;
  // Speculative decoding: tokens drafted for it, and of those, how many stood (each one a token
  // that came without a decode step of its own).
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
  // A vision-language model: images (Idefics3: tiles) the vision tower encoded for it (not those
  // whose rows prefix reuse kept), and the seconds that took (part of prefill_seconds).
  int64_t images_encoded = 0;
  double image_seconds = 0;

  double time_to_first_token() const { return queued_seconds + prefill_seconds; }
  double prompt_tokens_per_second() const;      // prefilled (not cached) tokens / prefill_seconds
  double generation_tokens_per_second() const;  // decode_steps / decode_seconds
};

// One event per new token (token >= 0), and the last one has finished = true. A request that
// ends without a new token (cancelled, or an embedding) gets one event with token = -1.
struct TokenEvent {
  uint64_t request = 0;
  int32_t token = -1;
  std::string text;  // text this event adds (stop strings withheld); empty without a tokenizer
  std::optional<TokenLogprobs> logprobs;  // of `token`, when the sampling options ask for them
  bool finished = false;
  FinishReason reason = FinishReason::kLength;  // when finished
  std::string stop;                             // kStop: the stop string that ended the text
  std::string message;                          // for people, e.g. "context full: ..."
  RequestStats stats;                           // when finished
  std::vector<float> embedding;                 // kEmbedded: the pooled hidden states
};

using EventCallback = std::function<void(const TokenEvent&)>;

}  // namespace xlacel::engine
