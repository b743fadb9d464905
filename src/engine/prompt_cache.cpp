#include "engine/prompt_cache.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "engine/prefix_reuse.h"

namespace xlacel::engine {

std::size_t CachedSlot::bytes() const {
  return tokens.size() * sizeof(int32_t) + rows.bytes();
}

std::optional<PromptCache::Match> PromptCache::best(const std::vector<int32_t>& prompt,
                                                    int64_t ring_rows) const {
  std::optional<Match> best;
  if (prompt.empty()) return best;
  for (const Entry& entry : entries_) {
    const std::vector<int32_t>& tokens = entry.slot.tokens;
    const std::size_t limit = std::min(tokens.size(), prompt.size() - 1);
    const auto differ = std::mismatch(prompt.begin(), prompt.begin() + limit, tokens.begin());
    const int64_t common = reusable_prefix(differ.first - prompt.begin(),
                                           static_cast<int64_t>(tokens.size()), ring_rows);
    if (common > 0 && (!best || common > best->common)) best = Match{entry.id, common};
  }
  return best;
}

const CachedSlot& PromptCache::use(uint64_t id) {
  auto found = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& entry) { return entry.id == id; });
  if (found == entries_.end()) fail("prompt cache", "no entry {}", id);
  entries_.splice(entries_.begin(), entries_, found);
  return entries_.front().slot;
}

bool PromptCache::holds(const std::vector<int32_t>& tokens) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& entry) { return entry.slot.tokens == tokens; });
}

void PromptCache::put(CachedSlot slot) {
  bytes_ += slot.bytes();
  entries_.push_front({next_id_++, std::move(slot)});
  while (bytes_ > budget_ && !entries_.empty()) {
    bytes_ -= entries_.back().slot.bytes();
    entries_.pop_back();
  }
}

}  // namespace xlacel::engine
