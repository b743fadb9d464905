#include "common/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace xlacel {

uint64_t peak_rss_bytes() {
  rusage usage{};
  const uint64_t recorded =
      getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<uint64_t>(usage.ru_maxrss) * 1024 : 0;
  // The kernel records its high-water mark lazily from approximate per-CPU counters, so it can
  // trail the resident set read a moment earlier; the peak is at least what is resident now.
  return std::max(recorded, current_rss_bytes());
}

uint64_t current_rss_bytes() {
  // statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0;
  uint64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace xlacel
