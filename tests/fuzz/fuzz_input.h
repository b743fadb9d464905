#pragma once
// The readers take paths (they mmap), so each input is written to a scratch file in /dev/shm.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace xlacel::fuzz {

inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  std::string path = "/dev/shm/xlacel-fuzz-" + std::to_string(::getpid()) + suffix;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file != nullptr) {
    std::fwrite(data, 1, size, file);
    std::fclose(file);
  }
  return path;
}

}  // namespace xlacel::fuzz
