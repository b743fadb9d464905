#pragma once
// The prefill chunk rule every runtime shares: a prompt runs through the prefill graph in
// chunks of the bucket size, each from the first position not yet cached (the graph leaves out
// the padding rows of a final chunk that reach past the capacity); a shorter chunk runs in the
// smallest compiled bucket that holds it.
#include <cstdint>
#include <span>

namespace xlacel::engine {

struct PrefillChunk {
  int64_t start = 0;      // first position the chunk writes
  int64_t valid = 0;      // real tokens in it, from `start`
  int64_t chunk_end = 0;  // positions < chunk_end are cached afterwards
};

// The next chunk of a sequence with `cached` positions written and `total` tokens to cache.
// Requires 0 <= cached < total and bucket >= 1.
PrefillChunk next_prefill_chunk(int64_t cached, int64_t total, int64_t bucket);

// The bucket a chunk of `valid` tokens runs in: the smallest of `buckets` (ascending, the last
// the chunk size) that holds it.
int64_t prefill_bucket_for(int64_t valid, std::span<const int64_t> buckets);

}  // namespace xlacel::engine
