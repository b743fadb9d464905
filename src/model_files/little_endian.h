#pragma once
// Reading little-endian integers from unaligned bytes of a mapped model file (x86-64 and
// AArch64 Linux are little-endian, so a copy is the whole decoding).
#include <cstddef>
#include <cstring>

namespace xlacel {

template <typename T>
T load_little_endian(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace xlacel
