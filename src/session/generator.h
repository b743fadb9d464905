#pragma once
// The drive loop: prefill the prompt, then one decode step per new token, streaming each token
// to a callback; stops at any end-of-sequence id, at the token budget, or when the KV cache is
// full (with a message saying so).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "session/sampler.h"
#include "session/session.h"

namespace xlacel::session {

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  SamplingOptions sampling;
  std::vector<int32_t> eos_ids;  // any of these ends generation (it is kept in output_ids)
};

enum class StopReason { kEos, kLength, kCapacity, kCallback };
const char* stop_reason_name(StopReason reason);  // "eos", "length", "capacity", "callback"

struct GenerateResult {
  std::vector<int32_t> output_ids;
  StopReason stop = StopReason::kLength;
  std::string stop_message;  // for people, e.g. "context full: 512 of 512 positions used"
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0;  // prompt in -> first new token known (time to first token)
  double decode_seconds = 0;   // all decode steps after the first token
  int64_t decode_steps = 0;

  double prompt_tokens_per_second() const;
  double generation_tokens_per_second() const;  // decode_steps / decode_seconds
};

// Called with each new token as soon as it is known; return false to stop early.
using TokenCallback = std::function<bool(int32_t token)>;

// Runs `prompt` (non-empty) on `session` (appended to what it holds) and generates.
GenerateResult generate(Session& session, std::span<const int32_t> prompt,
                        const GenerateOptions& options, const TokenCallback& on_token);

}  // namespace xlacel::session
