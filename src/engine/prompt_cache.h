#pragma once
// The host's prompt cache: slots' contents kept in RAM after their slots went to other requests,
// so that a prompt starting with one (an agent's system prompt and tools, resent on every call)
// gets it copied back into a slot instead of prefilled again. An entry is a slot's tokens and
// the rows of every cache that hold them (executor::ModelRunner::save_slot), so restoring one
// leaves the slot as it was, ring caches and recurrent state included. Entries go least recently
// used first once their bytes pass the budget.
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "executor/model_runner.h"

namespace xlacel::engine {

struct CachedSlot {
  std::vector<int32_t> tokens;  // the slot's resident tokens when it was saved
  executor::SlotRows rows;
  std::size_t bytes() const;
};

class PromptCache {
 public:
  explicit PromptCache(std::size_t budget_bytes) : budget_(budget_bytes) {}

  // The entry whose tokens `prompt` may reuse the most of (reusable_prefix, with `ring_rows`),
  // as its id and the tokens to reuse; nullopt when none shares any. The last prompt token is
  // never reused (its logits give the first new token).
  struct Match {
    uint64_t id = 0;
    int64_t common = 0;
  };
  std::optional<Match> best(const std::vector<int32_t>& prompt, int64_t ring_rows) const;
  // The entry (now the most recently used); it stays in the cache.
  const CachedSlot& use(uint64_t id);
  // Whether an entry holds exactly `tokens`.
  bool holds(const std::vector<int32_t>& tokens) const;
  // Adds an entry, then drops the least recently used while the bytes pass the budget (the new
  // one too, when it alone does).
  void put(CachedSlot slot);

  std::size_t entries() const { return entries_.size(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Entry {
    uint64_t id;
    CachedSlot slot;
  };
  std::size_t budget_;
  std::size_t bytes_ = 0;
  uint64_t next_id_ = 1;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace xlacel::engine
