#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <queue>

#include "common/error.h"
#include "common/utf8.h"

namespace xlacel::tokenizer {

namespace {

constexpr int64_t kMaxId = int64_t{1} << 24;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct Symbol {
  int32_t id;
  int64_t prev;
  int64_t next;
  std::size_t length;  // 0 once merged into its left neighbour
};

struct Merge {
  std::size_t pos;
  int32_t rank;
  int32_t new_id;
  // std::priority_queue pops the largest: make that the lowest rank, then the lowest pos.
  bool operator<(const Merge& other) const {
    if (rank != other.rank) return rank > other.rank;
    return pos > other.pos;
  }
};

}  // namespace

BpeModel::BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, std::string_view where)
    : options_(std::move(options)) {
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0 || id >= kMaxId)
      fail(where, "vocabulary id {} of token '{}' is out of range", id, token);
    max_id = std::max(max_id, id);
  }
  id_to_token_.resize(static_cast<std::size_t>(max_id + 1));
  present_.assign(id_to_token_.size(), false);
  vocab_.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    if (present_[id]) {
      fail(where, "vocabulary id {} is given to both '{}' and '{}'", id, id_to_token_[id], token);
    }
    if (!vocab_.emplace(token, id).second) fail(where, "vocabulary lists '{}' twice", token);
    present_[id] = true;
    id_to_token_[id] = std::move(token);
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto left_id = token_to_id(left);
    auto right_id = token_to_id(right);
    auto merged_id = token_to_id(left + right);
    if (!left_id || !right_id || !merged_id) {
      const std::string& missing = !left_id ? left : !right_id ? right : left + right;
      fail(where, "merge {} '{} {}' names '{}', which is not in the vocabulary", rank, left, right,
           missing);
    }
    // A repeated pair keeps its last rank, as in tokenizers' HashMap collect.
    merges_[pair_key(*left_id, *right_id)] = {static_cast<int32_t>(rank), *merged_id};
  }
  merge_count_ = merges.size();
  if (options_.unk_token) {
    unk_id_ = token_to_id(*options_.unk_token);
    if (!unk_id_) fail(where, "unk_token '{}' is not in the vocabulary", *options_.unk_token);
  }
  if (options_.byte_fallback) {
    byte_fallback_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      if (auto id = token_to_id(fmt::format("<0x{:02X}>", b))) byte_fallback_ids_[b] = *id;
    }
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

bool BpeModel::has_id(int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < present_.size() && present_[id];
}

std::string_view BpeModel::id_to_token(int32_t id) const {
  return has_id(id) ? std::string_view(id_to_token_[id]) : std::string_view();
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  std::optional<Symbol> unk;  // pending (possibly fused) unknown symbol
  auto push = [&symbols](Symbol symbol) {
    symbol.prev = static_cast<int64_t>(symbols.size()) - 1;
    symbol.next = static_cast<int64_t>(symbols.size()) + 1;
    symbols.push_back(symbol);
  };
  std::size_t pos = 0;
  while (pos < word.size()) {
    std::size_t start = pos;
    if (!utf8::decode(word, pos)) pos = start + 1;  // cannot happen for valid input
    std::string_view piece = word.substr(start, pos - start);
    if (auto id = token_to_id(piece)) {
      if (unk) {
        push(*unk);
        unk.reset();
      }
      push(Symbol{*id, 0, 0, piece.size()});
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : piece) all &= byte_fallback_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        if (unk) {
          push(*unk);
          unk.reset();
        }
        for (char c : piece)
          push(Symbol{byte_fallback_ids_[static_cast<unsigned char>(c)], 0, 0, 1});
        continue;
      }
    }
    if (unk_id_) {
      if (unk && options_.fuse_unk) {
        unk->length += piece.size();
      } else {
        if (unk) push(*unk);
        unk = Symbol{*unk_id_, 0, 0, piece.size()};
      }
    }
    // Without an unk token tokenizers drops the character.
  }
  if (unk) push(*unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Merge> queue;
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
    auto it = merges_.find(pair_key(symbols[i].id, symbols[i + 1].id));
    if (it != merges_.end()) queue.push(Merge{i, it->second.first, it->second.second});
  }
  while (!queue.empty()) {
    Merge top = queue.top();
    queue.pop();
    Symbol& current = symbols[top.pos];
    if (current.length == 0 || current.next == -1) continue;
    auto next_pos = static_cast<std::size_t>(current.next);
    Symbol right = symbols[next_pos];
    auto it = merges_.find(pair_key(current.id, right.id));
    if (it == merges_.end() || it->second.second != top.new_id) continue;  // stale entry
    current.id = top.new_id;
    current.length += right.length;
    current.next = right.next;
    symbols[next_pos].length = 0;
    if (right.next > -1 && static_cast<std::size_t>(right.next) < symbols.size()) {
      symbols[static_cast<std::size_t>(right.next)].prev = static_cast<int64_t>(top.pos);
    }
    if (current.prev >= 0) {
      auto prev = static_cast<std::size_t>(current.prev);
      auto found = merges_.find(pair_key(symbols[prev].id, current.id));
      if (found != merges_.end()) {
        queue.push(Merge{prev, found->second.first, found->second.second});
      }
    }
    if (current.next >= 0 && static_cast<std::size_t>(current.next) < symbols.size()) {
      auto found =
          merges_.find(pair_key(current.id, symbols[static_cast<std::size_t>(current.next)].id));
      if (found != merges_.end()) {
        queue.push(Merge{top.pos, found->second.first, found->second.second});
      }
    }
  }
  for (const Symbol& symbol : symbols) {
    if (symbol.length != 0) out.push_back(symbol.id);
  }
}

}  // namespace xlacel::tokenizer
