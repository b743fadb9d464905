#include "engine/prefill_plan.h"

#include <algorithm>

namespace xlacel::engine {

PrefillChunk next_prefill_chunk(int64_t cached, int64_t total, int64_t bucket, int64_t capacity) {
  PrefillChunk chunk;
  chunk.chunk_end = std::min(cached + bucket, total);
  chunk.start =
      cached + bucket > capacity ? std::max<int64_t>(0, chunk.chunk_end - bucket) : cached;
  chunk.valid = chunk.chunk_end - chunk.start;
  return chunk;
}

}  // namespace xlacel::engine
