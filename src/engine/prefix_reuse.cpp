#include "engine/prefix_reuse.h"

namespace xlacel::engine {

int64_t reusable_prefix(int64_t common, int64_t resident, int64_t ring_rows) {
  const bool ring_wrapped = ring_rows > 0 && resident >= ring_rows;
  return ring_wrapped && common < resident ? 0 : common;
}

}  // namespace xlacel::engine
