#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace xlacel::engine {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int64_t top_n) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const auto value = [&](std::size_t i) {
    const float x = logits[i];
    return std::isnan(x) ? kNegInf : static_cast<double>(x);
  };
  // Best first, ties to the lower id: the same order as the argmax.
  const auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob != b.logprob ? a.logprob > b.logprob : a.id < b.id;
  };
  const auto wanted = static_cast<std::size_t>(std::max<int64_t>(top_n, 0));
  std::vector<TokenLogprob> top;  // the best `wanted` logits so far, sorted by `better`
  top.reserve(wanted + 1);
  double max_logit = kNegInf;
  for (std::size_t i = 0; i < logits.size(); ++i) max_logit = std::max(max_logit, value(i));
  double total = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double x = value(i);
    if (x == kNegInf) continue;
    total += std::exp(x - max_logit);
    const TokenLogprob candidate{static_cast<int32_t>(i), x};
    if (top.size() < wanted || (wanted > 0 && better(candidate, top.back()))) {
      top.insert(std::upper_bound(top.begin(), top.end(), candidate, better), candidate);
      if (top.size() > wanted) top.pop_back();
    }
  }
  // Every logit -inf (or NaN): nothing is possible, every token gets -inf.
  const double log_total =
      total > 0 ? max_logit + std::log(total) : std::numeric_limits<double>::infinity();
  TokenLogprobs result;
  const bool known = chosen >= 0 && static_cast<std::size_t>(chosen) < logits.size();
  result.chosen = {chosen, known ? value(static_cast<std::size_t>(chosen)) - log_total : kNegInf};
  for (TokenLogprob& entry : top) entry.logprob -= log_total;
  result.top = std::move(top);
  return result;
}

}  // namespace xlacel::engine
