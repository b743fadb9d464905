#include "engine/ngram_draft.h"

#include <algorithm>

namespace xlacel::engine {

std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int64_t max_tokens,
                                 const NgramDraftOptions& options) {
  const auto length = static_cast<int64_t>(context.size());
  if (max_tokens < 1) return {};
  for (int64_t n = std::min(options.max_ngram, length - 1); n >= options.min_ngram; --n) {
    const std::span<const int32_t> suffix = context.subspan(static_cast<std::size_t>(length - n));
    // The latest occurrence that ends before the suffix does, so that a token follows it.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      const std::span<const int32_t> candidate =
          context.subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(n));
      if (!std::equal(candidate.begin(), candidate.end(), suffix.begin())) continue;
      const int64_t from = start + n;
      const int64_t count = std::min(max_tokens, length - from);
      return {context.begin() + from, context.begin() + from + count};
    }
  }
  return {};
}

}  // namespace xlacel::engine
