#pragma once
// The BPE model with HF `tokenizers` semantics: merges applied lowest rank first (leftmost on
// ties) through the same priority-queue walk, ignore_merges, unk / fuse_unk, byte_fallback.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xlacel::tokenizer {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class BpeModel {
 public:
  BpeModel() = default;
  // `vocab`: token -> id (ids distinct, non-negative; holes allowed). Throws Error naming
  // `where` for a merge whose parts or result are not in the vocabulary, or a bad unk token.
  BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
           std::string_view where);

  // Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Empty for an id the vocabulary does not have.
  std::string_view id_to_token(int32_t id) const;
  bool has_id(int32_t id) const;
  std::size_t token_count() const { return vocab_.size(); }     // tokenizers' get_vocab_size()
  std::size_t id_limit() const { return id_to_token_.size(); }  // largest id + 1
  std::size_t merge_count() const { return merge_count_; }
  const BpeOptions& options() const { return options_; }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> present_;
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::size_t merge_count_ = 0;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::vector<int32_t> byte_fallback_ids_;  // <0xXX> ids, -1 where absent
};

}  // namespace xlacel::tokenizer
