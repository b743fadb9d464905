#pragma once
// Host-side sampling from the logits graph's output. The logits are first adjusted as the
// OpenAI API defines (logit_bias added, then after transformers' repetition penalty OpenAI's
// frequency and presence penalties over the tokens this sampler has drawn); log-probabilities
// are reported from these adjusted logits (before temperature, as vLLM does). Then, in the order
// transformers applies its warpers: temperature, top-k, top-p, min-p, and a draw. Deterministic for
// a seed: the generator is std::mt19937_64 (fully specified by the standard) and uniforms are made
// from its bits here, not by <random>'s distributions (whose algorithms differ between standard
// libraries).
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/token_logprobs.h"

namespace xlacel::engine {

struct SamplingOptions {
  float temperature = 0;       // 0: greedy (argmax); must be >= 0
  int64_t top_k = 0;           // 0: off
  float top_p = 1;             // 1: off
  float min_p = 0;             // 0: off
  float repeat_penalty = 1;    // 1: off; transformers' RepetitionPenaltyLogitsProcessor
  int64_t repeat_last_n = 64;  // how many recent tokens the penalty looks at (0: all)
  // OpenAI's penalties, in [-2, 2] (0: off): logit[j] -= c[j] * frequency_penalty +
  // (c[j] > 0) * presence_penalty, c[j] = how often j was drawn so far (not the prompt).
  float frequency_penalty = 0;
  float presence_penalty = 0;
  std::vector<std::pair<int32_t, float>> logit_bias;  // (id, bias in [-100, 100]) added first
  bool logprobs = false;                              // report each drawn token's log-probability
  int64_t top_logprobs = 0;  // and this many most likely alternatives, [0, kMaxTopLogprobs]
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0; }
  // Greedy without a penalty, a bias or logprobs needs no logits on the host: argmax stays on
  // the device.
  bool needs_logits() const {
    return !greedy() || repeat_penalty != 1 || frequency_penalty != 0 || presence_penalty != 0 ||
           !logit_bias.empty() || logprobs;
  }
  // Empty when valid; otherwise a message naming the bad option ("top_p must be in (0, 1]").
  std::string validate() const;
};

// One token of the distribution a draw is made from.
struct TokenProbability {
  int32_t id = 0;
  double probability = 0;
};

class Sampler {
 public:
  // Throws Error with validate()'s message when the options are invalid.
  explicit Sampler(const SamplingOptions& options);

  // Picks the next token from `logits` (modified in place), given the tokens so far (prompt
  // and output, for the repetition penalty), and counts it as drawn (for the frequency and
  // presence penalties). With options.logprobs and `logprobs` not null, fills it in.
  int32_t sample(std::span<float> logits, std::span<const int32_t> context,
                 TokenLogprobs* logprobs = nullptr);

  // What sample() draws from, without drawing: the tokens every processor keeps and their
  // probabilities (in the order the draw walks them). Greedy: the argmax with probability 1.
  std::vector<TokenProbability> distribution(std::span<float> logits,
                                             std::span<const int32_t> context);

 private:
  double uniform();                       // [0, 1) from 53 random bits
  int32_t draw(std::span<float> logits);  // from adjusted logits: argmax, or warp and draw
  // logit_bias, the repetition penalty, then the frequency and presence penalties.
  void adjust(std::span<float> logits, std::span<const int32_t> context);
  void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> context);
  // Temperature, top-k, top-p and min-p: leaves the kept ids in candidates_ and their
  // unnormalized probabilities in weights_ (indexed by id).
  void keep_candidates(std::span<float> logits);

  SamplingOptions options_;
  std::mt19937_64 engine_;
  std::vector<int32_t> candidates_;  // reused between calls
  std::vector<double> weights_;      // [vocab], exp(logit - max logit) for the candidates
  std::vector<int32_t> penalized_;   // distinct ids of the penalty window
  std::unordered_map<int32_t, int32_t> drawn_;  // id -> times sample() returned it
  std::vector<float> adjusted_;                 // the adjusted logits, kept for logprobs
};

}  // namespace xlacel::engine
