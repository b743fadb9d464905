#pragma once
// One sequence on a backend: the tokens so far, their KV cache, and the rules every backend
// shares: prompts run through the prefill graph in chunks of the bucket size (a last chunk that
// would overrun the capacity re-feeds earlier tokens, see models/graph_options.h), decode steps
// one token at a time, and nothing may go past the cache capacity.
#include <cstdint>
#include <span>
#include <vector>

#include "session/backend.h"

namespace xlacel::session {

class Session {
 public:
  explicit Session(Backend& backend);

  const Capabilities& capabilities() const { return backend_.capabilities(); }
  int64_t position() const { return static_cast<int64_t>(history_.size()); }  // tokens cached
  int64_t remaining() const { return capabilities().capacity - position(); }
  const std::vector<int32_t>& history() const { return history_; }

  // Starts a new sequence (the cache rows are overwritten as the new tokens arrive).
  void reset() { history_.clear(); }

  // Appends `tokens` (at least one) to the sequence; `out` describes the last one. Throws Error
  // "prompt of N tokens does not fit: M of capacity C positions left" before running anything
  // when they do not fit.
  void prefill(std::span<const int32_t> tokens, bool want_logits, StepOutput& out);

  // Appends one token. Throws Error when the cache is full.
  void decode_step(int32_t token, bool want_logits, StepOutput& out);

 private:
  Backend& backend_;
  std::vector<int32_t> history_;
};

}  // namespace xlacel::session
