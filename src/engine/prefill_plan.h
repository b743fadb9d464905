#pragma once
// The prefill chunk rule every runtime shares: a prompt runs through the prefill graph in
// chunks of the bucket size, and a final chunk that would overrun the slot's capacity moves
// back and re-feeds earlier tokens instead (the graph writes all `bucket` rows at `start`).
#include <cstdint>

namespace xlacel::engine {

struct PrefillChunk {
  int64_t start = 0;      // first position the chunk writes
  int64_t valid = 0;      // real tokens in it, from `start`
  int64_t chunk_end = 0;  // positions < chunk_end are cached afterwards
};

// The next chunk of a sequence with `cached` positions written and `total` tokens to cache.
// Requires 0 <= cached < total <= capacity and 1 <= bucket <= capacity.
PrefillChunk next_prefill_chunk(int64_t cached, int64_t total, int64_t bucket, int64_t capacity);

}  // namespace xlacel::engine
