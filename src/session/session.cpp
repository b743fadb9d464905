#include "session/session.h"

#include <algorithm>

#include "common/error.h"

namespace xlacel::session {

Session::Session(Backend& backend) : backend_(backend) {}

void Session::prefill(std::span<const int32_t> tokens, bool want_logits, StepOutput& out) {
  const Capabilities& caps = capabilities();
  const int64_t count = static_cast<int64_t>(tokens.size());
  if (count == 0) fail("session", "empty prompt: prefill needs at least one token");
  if (count > remaining()) {
    fail("session", "prompt of {} tokens does not fit: {} of capacity {} positions left", count,
         remaining(), caps.capacity);
  }
  const int64_t bucket = caps.prefill_bucket;
  if (bucket <= 0 || bucket > caps.capacity) {
    fail("session", "backend prefill bucket {} is not in [1, capacity {}]", bucket, caps.capacity);
  }

  // Chunks read from the whole sequence (history, then the new tokens), since a final chunk
  // near the capacity re-feeds tokens that are already cached.
  const int64_t first_new = position();
  const int64_t end = first_new + count;
  auto token_at = [&](int64_t pos) {
    return pos < first_new ? history_[pos] : tokens[pos - first_new];
  };

  std::vector<int32_t> bucket_tokens(bucket);
  for (int64_t next = first_new; next < end;) {
    const int64_t chunk_end = std::min(next + bucket, end);
    // The graph writes all `bucket` rows at `start`, so the chunk must lie inside the cache;
    // one that would overrun moves back and re-feeds earlier tokens instead.
    const int64_t start =
        next + bucket > caps.capacity ? std::max<int64_t>(0, chunk_end - bucket) : next;
    const int64_t valid = chunk_end - start;
    std::fill(bucket_tokens.begin(), bucket_tokens.end(), 0);
    for (int64_t i = 0; i < valid; ++i) bucket_tokens[i] = token_at(start + i);

    const bool last = chunk_end == end;
    backend_.prefill_chunk(bucket_tokens, static_cast<int32_t>(start), static_cast<int32_t>(valid),
                           last && want_logits, out);
    // Only tokens whose K/V rows are now written join the history.
    for (int64_t pos = next; pos < chunk_end; ++pos) history_.push_back(tokens[pos - first_new]);
    next = chunk_end;
  }
}

void Session::decode_step(int32_t token, bool want_logits, StepOutput& out) {
  if (remaining() <= 0) {
    fail("session", "context full: {} of {} positions used", position(), capabilities().capacity);
  }
  backend_.decode(token, static_cast<int32_t>(position()), want_logits, out);
  history_.push_back(token);
}

}  // namespace xlacel::session
