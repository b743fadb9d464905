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

template <typename T>
struct AlignedAllocator {
  using value_type = T;

  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding converts

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete (p, std::align_val_t{kBufferAlignment});
  }
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
