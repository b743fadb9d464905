#pragma once
// Host-side sampling from the logits graph's output, in the order transformers applies its
// logits processors and warpers: repetition penalty, temperature, top-k, top-p, min-p, then a
// draw. Deterministic for a seed: the generator is std::mt19937_64 (fully specified by the
// standard) and uniforms are made from its bits here, not by <random>'s distributions (whose
// algorithms differ between standard libraries).
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace xlacel::engine {

struct SamplingOptions {
  float temperature = 0;       // 0: greedy (argmax); must be >= 0
  int64_t top_k = 0;           // 0: off
  float top_p = 1;             // 1: off
  float min_p = 0;             // 0: off
  float repeat_penalty = 1;    // 1: off; transformers' RepetitionPenaltyLogitsProcessor
  int64_t repeat_last_n = 64;  // how many recent tokens the penalty looks at (0: all)
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0; }
  // Greedy without a penalty needs no logits on the host: argmax stays on the device.
  bool needs_logits() const { return !greedy() || repeat_penalty != 1; }
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
  // and output, for the repetition penalty).
  int32_t sample(std::span<float> logits, std::span<const int32_t> context);

  // What sample() draws from, without drawing: the tokens every processor keeps and their
  // probabilities (in the order the draw walks them). Greedy: the argmax with probability 1.
  std::vector<TokenProbability> distribution(std::span<float> logits,
                                             std::span<const int32_t> context);

 private:
  double uniform();  // [0, 1) from 53 random bits
  void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> context);
  // Temperature, top-k, top-p and min-p: leaves the kept ids in candidates_ and their
  // unnormalized probabilities in weights_ (indexed by id).
  void keep_candidates(std::span<float> logits);

  SamplingOptions options_;
  std::mt19937_64 engine_;
  std::vector<int32_t> candidates_;  // reused between calls
  std::vector<double> weights_;      // [vocab], exp(logit - max logit) for the candidates
  std::vector<int32_t> penalized_;   // distinct ids of the penalty window
};

}  // namespace xlacel::engine
