#include "engine/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "executor/argmax.h"

namespace xlacel::engine {

namespace {

// Best first; equal logits put the higher id first, so that top-p drops the lower id of a tie
// first, as TopPLogitsWarper does after torch's (stable, for small inputs) ascending sort.
// A total order, so sorting gives the same result with every standard library.
struct BestFirst {
  std::span<const float> logits;
  bool operator()(int32_t a, int32_t b) const {
    if (logits[a] != logits[b]) return logits[a] > logits[b];
    return a > b;
  }
};

}  // namespace

std::string SamplingOptions::validate() const {
  // Any finite temperature >= 0, as transformers takes (the OpenAI API caps it at 2 itself).
  if (!(std::isfinite(temperature) && temperature >= 0)) {
    return fmt::format("temperature must be a finite number >= 0 (0: greedy), got {}", temperature);
  }
  if (top_k < 0) return fmt::format("top_k must be >= 0 (0: off), got {}", top_k);
  if (!(top_p > 0 && top_p <= 1)) return fmt::format("top_p must be in (0, 1], got {}", top_p);
  if (!(min_p >= 0 && min_p <= 1)) return fmt::format("min_p must be in [0, 1], got {}", min_p);
  if (!(repeat_penalty > 0 && std::isfinite(repeat_penalty))) {
    return fmt::format("repeat_penalty must be > 0 (1: off), got {}", repeat_penalty);
  }
  if (repeat_last_n < 0) {
    return fmt::format("repeat_last_n must be >= 0 (0: all tokens), got {}", repeat_last_n);
  }
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2)) {
    return fmt::format("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  }
  if (!(presence_penalty >= -2 && presence_penalty <= 2)) {
    return fmt::format("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return fmt::format("logit_bias token id must be >= 0, got {}", id);
    if (!(bias >= -100 && bias <= 100)) {
      return fmt::format("logit_bias of token {} must be in [-100, 100], got {}", id, bias);
    }
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return fmt::format("top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs, top_logprobs);
  }
  return {};
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), engine_(options.seed) {
  if (std::string problem = options.validate(); !problem.empty()) throw Error(problem);
}

double Sampler::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

void Sampler::adjust(std::span<float> logits, std::span<const int32_t> context) {
  for (const auto& [id, bias] : options_.logit_bias) {
    if (static_cast<size_t>(id) < logits.size()) logits[id] += bias;
  }
  apply_repetition_penalty(logits, context);
  if (options_.frequency_penalty == 0 && options_.presence_penalty == 0) return;
  for (const auto& [id, count] : drawn_) {
    if (static_cast<size_t>(id) >= logits.size()) continue;
    logits[id] -=
        static_cast<float>(count) * options_.frequency_penalty + options_.presence_penalty;
  }
}

// RepetitionPenaltyLogitsProcessor: each distinct token of the window once, in float as torch.
void Sampler::apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> context) {
  if (options_.repeat_penalty == 1) return;
  const auto window_size = static_cast<size_t>(options_.repeat_last_n);
  if (window_size > 0 && context.size() > window_size) context = context.last(window_size);
  penalized_.assign(context.begin(), context.end());
  std::sort(penalized_.begin(), penalized_.end());
  penalized_.erase(std::unique(penalized_.begin(), penalized_.end()), penalized_.end());
  const float penalty = options_.repeat_penalty;
  for (int32_t id : penalized_) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& score = logits[id];
    score = score < 0 ? score * penalty : score / penalty;
  }
}

void Sampler::keep_candidates(std::span<float> logits) {
  const BestFirst best_first{logits};
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (options_.temperature != 1) logits[i] = logits[i] / options_.temperature;
    // -inf has probability 0 and NaN has none: neither can be drawn.
    if (logits[i] > -std::numeric_limits<float>::infinity()) {
      candidates_.push_back(static_cast<int32_t>(i));
    }
  }
  if (candidates_.empty()) fail("sampler", "no finite logits to sample from");

  // TopKLogitsWarper keeps every score >= the k-th largest, ties with it included.
  size_t sorted_count = 0;  // candidates_[0, sorted_count) are in BestFirst order
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < candidates_.size()) {
    const auto kth = candidates_.begin() + (options_.top_k - 1);
    std::nth_element(candidates_.begin(), kth, candidates_.end(), best_first);
    const float threshold = logits[*kth];
    auto kept_end = std::partition(kth + 1, candidates_.end(),
                                   [&](int32_t id) { return logits[id] >= threshold; });
    candidates_.erase(kept_end, candidates_.end());
    std::sort(candidates_.begin(), candidates_.end(), best_first);
    sorted_count = candidates_.size();
  }

  float max_logit = logits[candidates_[0]];
  if (sorted_count == 0) {
    for (int32_t id : candidates_) max_logit = std::max(max_logit, logits[id]);
  }
  weights_.resize(logits.size());
  double total = 0;
  for (int32_t id : candidates_) {
    weights_[id] = std::exp(static_cast<double>(logits[id]) - static_cast<double>(max_logit));
    total += weights_[id];
  }

  // TopPLogitsWarper sorts ascending and drops tokens whose cumulative probability (counted from
  // the least likely up) is <= 1 - top_p, in float32; the most likely token always stays. The
  // kept set is a prefix of the best-first order, so only that prefix is sorted, growing as needed.
  const auto min_weight = static_cast<double>(options_.min_p);
  if (options_.top_p < 1) {
    // Min-p keeps a prefix of the same order (its threshold is relative to the top token, which
    // top-p keeps), so tokens below it need no ranking; they still count in top-p's total.
    const auto passes_min_p = [&](int32_t id) { return weights_[id] >= min_weight; };
    const auto ranked_end =
        sorted_count > 0
            ? std::partition_point(candidates_.begin(), candidates_.end(), passes_min_p)
            : std::partition(candidates_.begin(), candidates_.end(), passes_min_p);
    const auto ranked = static_cast<size_t>(ranked_end - candidates_.begin());
    const auto at = [&](size_t i) { return candidates_.begin() + static_cast<std::ptrdiff_t>(i); };
    const auto limit = static_cast<float>(1.0 - static_cast<double>(options_.top_p));
    double above = 0;  // mass of the tokens before i in best-first order
    size_t keep = ranked;
    for (size_t i = 0; i < ranked; ++i) {
      if (i == sorted_count) {
        sorted_count = std::min(ranked, std::max<size_t>(256, 4 * sorted_count));
        if (sorted_count < ranked)
          std::nth_element(at(i), at(sorted_count), at(ranked), best_first);
        std::sort(at(i), at(sorted_count), best_first);
      }
      const auto from_bottom = static_cast<float>((total - above) / total);
      if (i > 0 && from_bottom <= limit) {
        keep = i;
        break;
      }
      above += weights_[candidates_[i]];
    }
    candidates_.resize(keep);
  }

  // MinPLogitsWarper: drop probabilities below min_p times the largest (whose weight is 1).
  if (options_.min_p > 0) {
    std::erase_if(candidates_, [&](int32_t id) { return weights_[id] < min_weight; });
  }
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> context,
                        TokenLogprobs* logprobs) {
  adjust(logits, context);
  const bool report = logprobs != nullptr && options_.logprobs;
  // The warpers below change the logits in place; logprobs are of the adjusted ones.
  if (report && !options_.greedy()) adjusted_.assign(logits.begin(), logits.end());
  const int32_t token = draw(logits);
  ++drawn_[token];
  if (report) {
    *logprobs = token_logprobs(options_.greedy() ? std::span<const float>(logits) : adjusted_,
                               token, options_.top_logprobs);
  }
  return token;
}

int32_t Sampler::draw(std::span<float> logits) {
  if (options_.greedy()) return executor::argmax(logits);
  keep_candidates(logits);
  double total = 0;
  for (int32_t id : candidates_) total += weights_[id];
  const double target = uniform() * total;
  double cumulative = 0;
  for (int32_t id : candidates_) {
    cumulative += weights_[id];
    if (target < cumulative) return id;
  }
  return candidates_.back();  // rounding left the target at the very top
}

std::vector<TokenProbability> Sampler::distribution(std::span<float> logits,
                                                    std::span<const int32_t> context) {
  adjust(logits, context);
  if (options_.greedy()) return {{executor::argmax(logits), 1.0}};
  keep_candidates(logits);
  double total = 0;
  for (int32_t id : candidates_) total += weights_[id];
  std::vector<TokenProbability> result;
  result.reserve(candidates_.size());
  for (int32_t id : candidates_) result.push_back({id, weights_[id] / total});
  return result;
}

}  // namespace xlacel::engine
