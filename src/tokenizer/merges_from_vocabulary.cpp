#include "tokenizer/merges_from_vocabulary.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "common/utf8.h"

namespace xlacel::tokenizer {

std::vector<std::pair<std::string, std::string>> merges_from_vocabulary(
    const std::vector<std::string>& tokens, const std::vector<double>& scores) {
  // token -> indices of its first and last spelling (Python's dicts iterate in first insertion
  // order and keep the last value).
  struct Positions {
    std::size_t first;
    std::size_t last;
  };
  std::unordered_map<std::string_view, Positions> positions;
  positions.reserve(tokens.size() * 2);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto [it, inserted] = positions.try_emplace(tokens[i], Positions{i, i});
    if (!inserted) it->second.last = i;
  }

  struct Candidate {
    double score;
    uint32_t left_chars;
    uint32_t right_chars;
    std::size_t token;  // index of the merged token's first spelling
    std::size_t left_bytes;
  };
  std::vector<Candidate> candidates;
  std::vector<std::size_t> boundaries;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string_view token = tokens[i];
    const Positions& self = positions.at(token);
    if (self.first != i) continue;  // a repeated spelling counts at its first position
    boundaries.clear();
    for (std::size_t pos = 0; pos < token.size();) {
      std::size_t start = pos;
      if (!utf8::decode(token, pos)) pos = start + 1;
      boundaries.push_back(pos);
    }
    auto total_chars = static_cast<uint32_t>(boundaries.size());
    for (uint32_t chars = 1; chars < total_chars; ++chars) {
      std::size_t split = boundaries[chars - 1];
      if (positions.contains(token.substr(0, split)) && positions.contains(token.substr(split))) {
        candidates.push_back({scores[self.last], chars, total_chars - chars, i, split});
      }
    }
  }
  // Python sorts with reverse=True, which keeps equal keys in their original order: the
  // vocabulary's order, then (within one token, where lengths already differ) nothing else.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.score != b.score) return a.score > b.score;
                     if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
                     return a.right_chars > b.right_chars;
                   });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    const std::string& token = tokens[c.token];
    merges.emplace_back(token.substr(0, c.left_bytes), token.substr(c.left_bytes));
  }
  return merges;
}

}  // namespace xlacel::tokenizer
