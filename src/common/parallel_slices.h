#pragma once
// Splitting a loop over [0, count) into one contiguous slice per thread: for work that is the
// same per index and large enough to pay for starting threads (measuring memory bandwidth,
// converting a model's weights at load).
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace xlacel {

// This machine's hardware threads (at least 1).
inline int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Threads for a load-time pass over `elements` (converting or narrowing a model's weights): the
// machine's for large tensors, whose conversion then scales with the cores (docs/PERFORMANCE.md,
// "Load-time threads"), one for small ones, which would not pay for starting threads.
inline int load_pass_threads(std::size_t elements) {
  return elements >= (std::size_t{1} << 20) ? hardware_threads() : 1;
}

// Runs body(thread_index, begin, end) on each thread's slice of [0, count), slice boundaries
// multiples of `grain`, and waits; one slice runs on the calling thread.
template <typename Body>
void for_each_slice(int threads, std::size_t count, const Body& body, std::size_t grain = 1) {
  const std::size_t grains = (count + grain - 1) / grain;
  threads = static_cast<int>(std::clamp<std::size_t>(grains, 1, static_cast<std::size_t>(threads)));
  const std::size_t per_thread = grains / static_cast<std::size_t>(threads) * grain;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads) - 1);
  for (int t = 1; t < threads; ++t) {
    const std::size_t begin = per_thread * static_cast<std::size_t>(t);
    const std::size_t end = t + 1 == threads ? count : begin + per_thread;
    workers.emplace_back([&body, t, begin, end] { body(t, begin, end); });
  }
  body(0, 0, threads == 1 ? count : per_thread);
  for (std::thread& worker : workers) worker.join();
}

}  // namespace xlacel
