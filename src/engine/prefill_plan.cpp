#include "engine/prefill_plan.h"

#include <algorithm>

namespace xlacel::engine {

PrefillChunk next_prefill_chunk(int64_t cached, int64_t total, int64_t bucket) {
  PrefillChunk chunk;
  chunk.start = cached;
  chunk.chunk_end = std::min(cached + bucket, total);
  chunk.valid = chunk.chunk_end - chunk.start;
  return chunk;
}

int64_t prefill_bucket_for(int64_t valid, std::span<const int64_t> buckets) {
  for (int64_t bucket : buckets) {
    if (bucket >= valid) return bucket;
  }
  return buckets.empty() ? valid : buckets.back();
}

}  // namespace xlacel::engine
