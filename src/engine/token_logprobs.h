#pragma once
// Log-probabilities of tokens under a logits vector (its log-softmax), as the OpenAI API reports
// them with `logprobs` / `top_logprobs`.
#include <cstdint>
#include <span>
#include <vector>

namespace xlacel::engine {

// OpenAI's limit on top_logprobs (and what the completions endpoint's `logprobs` takes here).
inline constexpr int64_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0;  // natural log; -inf for a token that cannot occur
};

struct TokenLogprobs {
  TokenLogprob chosen;            // the token drawn
  std::vector<TokenLogprob> top;  // the `top_n` most likely, best first (ties: lower id first)
};

// log_softmax(logits)[chosen] and the top_n most likely tokens, computed in double. NaN logits
// count as -inf (as the sampler never draws them). With ties to the lower id the argmax, which
// greedy decoding draws, is always the first entry of `top`.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int64_t top_n);

}  // namespace xlacel::engine
