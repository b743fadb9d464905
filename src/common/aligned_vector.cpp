#include "common/aligned_vector.h"

#include <sys/mman.h>

#include <cstdint>

namespace xlacel {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kPage = 4096;

// What a mapping of `bytes` spans: whole pages.
std::size_t mapped_length(std::size_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}

}  // namespace

void* allocate_buffer(std::size_t bytes) {
  if (bytes < kHugeBufferBytes) {
    return ::operator new (bytes, std::align_val_t{kBufferAlignment});
  }
  // Mapped with a huge page's worth of slack, then trimmed to start on a huge page boundary:
  // transparent huge pages back only whole aligned 2 MiB ranges (the tail keeps 4 KiB pages).
  const std::size_t length = mapped_length(bytes);
  void* mapped = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(mapped);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(mapped, aligned - start);
  const std::size_t tail = start + length + kHugePage - (aligned + length);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  // A hint: the system may not honour it (transparent huge pages off), and nothing depends on it.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void free_buffer(void* data, std::size_t bytes) noexcept {
  if (bytes < kHugeBufferBytes) {
    ::operator delete (data, std::align_val_t{kBufferAlignment});
    return;
  }
  ::munmap(data, mapped_length(bytes));
}

}  // namespace xlacel
