#pragma once
// Added tokens (special or not) as HF `tokenizers`' AddedVocabulary matches them in raw text,
// before pre-tokenization: leftmost-longest, non-normalized tokens first, then normalized ones
// in the remaining text; single_word / lstrip / rstrip honoured.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xlacel::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

class AddedVocabulary {
 public:
  // Tokens keep the first registration for a given content (a repeat is ignored).
  void add(AddedToken token);

  struct Segment {
    std::string_view text;  // for a token: the matched text, stripped spaces included
    int32_t id = -1;        // >= 0: an added token
  };
  std::vector<Segment> split(std::string_view text) const;  // both passes, no normalizer
  // The two passes apart, for a tokenizer with a normalizer between them: non-normalized tokens
  // in the raw text, then normalized tokens in a normalized piece of what the first left.
  std::vector<Segment> split_raw(std::string_view text) const;
  std::vector<Segment> split_normalized(std::string_view normalized_text) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_id(int32_t id) const;
  const AddedToken* find_content(std::string_view content) const;
  std::size_t special_count() const;

 private:
  struct Trie {
    struct Node {
      std::unordered_map<unsigned char, int32_t> children;
      int32_t token = -1;  // index into tokens_
    };
    std::vector<Node> nodes{Node{}};
    void insert(std::string_view text, int32_t token);
    // Longest token starting at text[pos]: (index, length) or index -1.
    std::pair<int32_t, std::size_t> longest_at(std::string_view text, std::size_t pos) const;
  };
  void split_with(const Trie& trie, std::string_view text, std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, std::size_t> by_id_;
  Trie plain_;       // normalized = false: matched on the raw text
  Trie normalized_;  // normalized = true: matched in what the first pass left
};

}  // namespace xlacel::tokenizer
