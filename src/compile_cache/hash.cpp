#include "compile_cache/hash.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <new>

#include "common/error.h"

namespace xlacel::compile_cache {

std::string Digest128::hex() const {
  return fmt::format("{:016x}{:016x}", high, low);
}

Hasher::Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_);
}

Hasher::~Hasher() {
  XXH3_freeState(state_);
}

Hasher& Hasher::raw(const void* data, std::size_t size) {
  XXH3_128bits_update(state_, data, size);
  return *this;
}

Hasher& Hasher::field(uint64_t value) {
  std::array<unsigned char, 8> bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  }
  return raw(bytes.data(), bytes.size());
}

Hasher& Hasher::field(std::string_view bytes) {
  field(static_cast<uint64_t>(bytes.size()));
  return raw(bytes.data(), bytes.size());
}

Digest128 Hasher::digest() const {
  XXH128_hash_t hash = XXH3_128bits_digest(state_);
  return {hash.high64, hash.low64};
}

Digest128 hash_bytes(std::string_view bytes) {
  XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  return {hash.high64, hash.low64};
}

Digest128 hash_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path.string(), "cannot open: {}", std::strerror(errno));
  Hasher hasher;
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      ::close(fd);
      fail(path.string(), "cannot read: {}", std::strerror(saved));
    }
    if (got == 0) break;
    hasher.raw(buffer.data(), static_cast<std::size_t>(got));
  }
  ::close(fd);
  return hasher.digest();
}

}  // namespace xlacel::compile_cache
