#include "common/memory_bandwidth.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "common/aligned_vector.h"
#include "common/parallel_slices.h"

namespace xlacel {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kAlignment = 2 * kMiB;  // whole huge pages (allocate_buffer)
constexpr int kPasses = 5;

uint64_t default_buffer_bytes() {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);  // 0 or -1 when unknown
  uint64_t bytes = l3 > 0 ? 8 * static_cast<uint64_t>(l3) : 0;
  return std::clamp<uint64_t>(bytes, 256 * kMiB, 1024 * kMiB);
}

// The buffer loops are not instrumented in sanitizer builds, which would measure the sanitizer.
#define XLACEL_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

XLACEL_UNINSTRUMENTED void fill_words(uint64_t* words, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) words[i] = i;
}

// Independent accumulators keep the loop free of a serial dependency, and the compiler can
// vectorize it; the sum is returned (and published) so the reads cannot be optimized away.
XLACEL_UNINSTRUMENTED uint64_t sum_words(const uint64_t* words, size_t count) {
  uint64_t sums[8] = {};
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    for (size_t lane = 0; lane < 8; ++lane) sums[lane] += words[i + lane];
  }
  for (; i < count; ++i) sums[0] += words[i];
  uint64_t total = 0;
  for (uint64_t sum : sums) total += sum;
  return total;
}

volatile uint64_t g_sink;  // where the sums go, so that the reads have an observable effect

}  // namespace

double measure_read_bandwidth(int threads, uint64_t buffer_bytes) {
  if (threads <= 0) threads = hardware_threads();
  if (buffer_bytes == 0) buffer_bytes = default_buffer_bytes();
  buffer_bytes = (buffer_bytes + kAlignment - 1) / kAlignment * kAlignment;
  const size_t count = buffer_bytes / sizeof(uint64_t);

  // On huge pages, as the weights whose decode this limit bounds (allocate_buffer).
  void* memory = nullptr;
  try {
    memory = allocate_buffer(buffer_bytes);
  } catch (const std::bad_alloc&) {
    return 0;
  }
  auto release = [buffer_bytes](uint64_t* words) { free_buffer(words, buffer_bytes); };
  std::unique_ptr<uint64_t, decltype(release)> buffer(static_cast<uint64_t*>(memory), release);
  uint64_t* words = buffer.get();
  // Each thread first touches the slice it will read (pages land on its NUMA node).
  for_each_slice(threads, count,
                 [words](int, size_t begin, size_t end) { fill_words(words, begin, end); });

  std::vector<uint64_t> sums(threads);
  double best_seconds = 0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for_each_slice(threads, count, [words, &sums](int t, size_t begin, size_t end) {
      sums[t] = sum_words(words + begin, end - begin);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass == 0 || seconds < best_seconds) best_seconds = seconds;
    for (uint64_t sum : sums) g_sink = g_sink + sum;
  }
  return best_seconds > 0 ? static_cast<double>(buffer_bytes) / best_seconds : 0;
}

}  // namespace xlacel
