#pragma once
// Prompt lookup, the drafter of speculative decoding that needs no second model: where the text
// so far ends with tokens that occurred earlier in it (in the prompt, or in what was generated),
// the tokens that followed them then are a guess at what follows now. Rewrites, quotes, code
// edits and extractions repeat long runs of their input, which such guesses get right.
#include <cstdint>
#include <span>
#include <vector>

namespace xlacel::engine {

struct NgramDraftOptions {
  int64_t min_ngram = 2;  // shortest suffix matched (1 would guess after every common token)
  int64_t max_ngram = 4;  // longest tried first: a longer match is a more specific context
};

// Up to `max_tokens` tokens that followed the latest earlier occurrence of the longest suffix of
// `context` (from max_ngram tokens down to min_ngram) found earlier in it; empty when none is.
std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int64_t max_tokens,
                                 const NgramDraftOptions& options = {});

}  // namespace xlacel::engine
