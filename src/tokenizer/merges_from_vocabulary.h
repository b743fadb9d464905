#pragma once
// The merges transformers derives for a vocabulary that lists none (a SentencePiece GGUF):
// `generate_merges` in transformers/tokenization_utils_base.py. Every token that splits into two
// vocabulary tokens yields a merge; merges are ordered by the merged token's score (highest
// first), then by the left part's length, then the right part's (longest first, in code points),
// ties keeping the vocabulary's order.
#include <string>
#include <utility>
#include <vector>

namespace xlacel::tokenizer {

// `tokens[i]` has score `scores[i]` (sizes equal). A token spelled twice counts once, at its
// first position, with the score and id of its last (as the Python dicts keep them).
std::vector<std::pair<std::string, std::string>> merges_from_vocabulary(
    const std::vector<std::string>& tokens, const std::vector<double>& scores);

}  // namespace xlacel::tokenizer
