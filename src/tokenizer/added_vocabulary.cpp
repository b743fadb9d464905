#include "tokenizer/added_vocabulary.h"

#include <algorithm>
#include <memory>

#include "common/utf8.h"
#include "tokenizer/regex.h"

namespace xlacel::tokenizer {

namespace {

// Rust's char::is_whitespace (the Unicode White_Space property).
bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Rust's char::is_alphanumeric: Alphabetic or a numeric general category.
bool is_alphanumeric(std::string_view character) {
  static const Regex regex(R"([\p{Alphabetic}\p{N}])", "tokenizer");
  return regex.matches_at_start(character);
}

// Start of the trailing run of whitespace in `text`.
std::size_t whitespace_start_at_end(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    std::size_t pos = start;
    auto c = utf8::decode(text, pos);
    if (!c || !is_whitespace(*c)) break;
    end = start;
  }
  return end;
}

// Length of the leading run of whitespace in `text`.
std::size_t whitespace_length_at_start(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t before = pos;
    auto c = utf8::decode(text, pos);
    if (!c || !is_whitespace(*c)) return before;
  }
  return pos;
}

std::string_view last_char(std::string_view text) {
  std::size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return text.substr(start);
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view text, int32_t token) {
  int32_t node = 0;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    auto it = nodes[node].children.find(byte);
    if (it == nodes[node].children.end()) {
      nodes.emplace_back();
      int32_t child = static_cast<int32_t>(nodes.size() - 1);
      nodes[node].children.emplace(byte, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  if (nodes[node].token < 0) nodes[node].token = token;
}

std::pair<int32_t, std::size_t> AddedVocabulary::Trie::longest_at(std::string_view text,
                                                                  std::size_t pos) const {
  std::pair<int32_t, std::size_t> best{-1, 0};
  int32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    auto it = nodes[node].children.find(static_cast<unsigned char>(text[i]));
    if (it == nodes[node].children.end()) break;
    node = it->second;
    if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - pos};
  }
  return best;
}

void AddedVocabulary::add(AddedToken token) {
  if (token.content.empty() || find_content(token.content) != nullptr) return;
  auto index = static_cast<int32_t>(tokens_.size());
  (token.normalized ? normalized_ : plain_).insert(token.content, index);
  by_id_.emplace(token.id, tokens_.size());
  tokens_.push_back(std::move(token));
}

const AddedToken* AddedVocabulary::find_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find_content(std::string_view content) const {
  for (const auto& token : tokens_) {
    if (token.content == content) return &token;
  }
  return nullptr;
}

std::size_t AddedVocabulary::special_count() const {
  std::size_t count = 0;
  for (const auto& token : tokens_) count += token.special ? 1 : 0;
  return count;
}

void AddedVocabulary::split_with(const Trie& trie, std::string_view text,
                                 std::vector<Segment>& out) const {
  std::size_t start_offset = 0;
  std::size_t pos = 0;
  if (trie.nodes[0].children.empty()) pos = text.size();
  while (pos < text.size()) {
    auto [index, length] = trie.longest_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<std::size_t>(index)];
    std::size_t start = pos;
    std::size_t stop = pos + length;
    pos = stop;  // the matcher resumes after the raw match
    if (token.single_word) {
      bool start_space = start == 0 || !is_alphanumeric(last_char(text.substr(0, start)));
      bool stop_space = stop == text.size() || !is_alphanumeric(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip)
      start = std::max(whitespace_start_at_end(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += whitespace_length_at_start(text.substr(stop));
    if (start_offset < start) out.push_back({text.substr(start_offset, start - start_offset), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({text.substr(start_offset), -1});
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::split_raw(std::string_view text) const {
  std::vector<Segment> out;
  split_with(plain_, text, out);
  return out;
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::split_normalized(
    std::string_view normalized_text) const {
  std::vector<Segment> out;
  split_with(normalized_, normalized_text, out);
  return out;
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::split(std::string_view text) const {
  std::vector<Segment> first;
  split_with(plain_, text, first);
  std::vector<Segment> result;
  for (const Segment& segment : first) {
    if (segment.id >= 0) {
      result.push_back(segment);
    } else {
      split_with(normalized_, segment.text, result);
    }
  }
  return result;
}

}  // namespace xlacel::tokenizer
