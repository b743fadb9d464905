#pragma once
// Memory use of this process, for stats and benchmarks (Linux).
#include <cstdint>

namespace xlacel {

uint64_t peak_rss_bytes();     // the largest resident set so far (ru_maxrss, at least current)
uint64_t current_rss_bytes();  // the resident set now (/proc/self/statm); 0 if unreadable

}  // namespace xlacel
