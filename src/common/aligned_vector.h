#pragma once
// Vectors whose data starts on a 64-byte boundary: host buffers a runtime may compute on where
// they are (device::Device::upload_in_place), since compiled CPU code assumes buffers that
// aligned (IREE's llvm-cpu: 64 bytes, an AVX-512 vector), which operator new does not give.
//
// Their elements start uninitialized: resize(n) and the size constructor default-initialize (no
// zero fill), for buffers their users write whole, such as a model's weights converted at load,
// whose pages are then first touched by the (parallel) conversion rather than by a fill on one
// thread. Write every element before reading it.
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace xlacel {

inline constexpr std::size_t kBufferAlignment = 64;
// Buffers of at least this many bytes are mapped on their own, from a 2 MiB boundary, and marked
// for transparent huge pages: a decode step streams every weight once, and with 4 KiB pages it
// takes a TLB miss every 4 KiB. Huge pages made decode faster and, with fewer page faults,
// brought the first token sooner after start (docs/PERFORMANCE.md, "Huge pages").
inline constexpr std::size_t kHugeBufferBytes = std::size_t{2} << 20;

// `bytes` (kBufferAlignment-aligned), and its release, given the same size.
void* allocate_buffer(std::size_t bytes);
void free_buffer(void* data, std::size_t bytes) noexcept;

template <typename T>
struct AlignedAllocator {
  using value_type = T;

  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding converts

  T* allocate(std::size_t n) { return static_cast<T*>(allocate_buffer(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { free_buffer(p, n * sizeof(T)); }
  // Default-initialization where a vector would value-initialize (see above).
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace xlacel
