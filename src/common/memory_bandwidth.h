#pragma once
// The machine's sustained memory read bandwidth: the ceiling for decode, which reads every
// weight once per token.
#include <cstdint>

namespace xlacel {

// Bytes per second read by `threads` threads (<= 0: std::thread::hardware_concurrency()), each
// summing its own slice of a buffer far larger than the last-level cache (`buffer_bytes`, 0:
// 8x the L3, at least 256 MiB and at most 1 GiB); the best of a few passes, so it is slow
// (docs/PERFORMANCE.md, "Read-bandwidth probe").
double measure_read_bandwidth(int threads = 0, uint64_t buffer_bytes = 0);

}  // namespace xlacel
