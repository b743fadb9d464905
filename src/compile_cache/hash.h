#pragma once
// The cache's one hash: XXH3-128 (libxxhash). Keys hash length-prefixed fields so that no two
// different field lists can produce the same byte stream; artifacts are checksummed whole.
#include <xxhash.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace xlacel::compile_cache {

struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;

  std::string hex() const;  // 32 lowercase hex digits, high half first
  bool operator==(const Digest128&) const = default;
};

// Incremental XXH3-128 over a sequence of fields.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  // Appends the field's length (8 bytes, little-endian) and then its bytes.
  Hasher& field(std::string_view bytes);
  Hasher& field(uint64_t value);
  // Appends raw bytes (for streaming one large value; no length prefix).
  Hasher& raw(const void* data, std::size_t size);
  Digest128 digest() const;

 private:
  XXH3_state_t* state_;
};

Digest128 hash_bytes(std::string_view bytes);

// XXH3-128 of a whole file, streamed; throws Error naming path when it cannot be read.
Digest128 hash_file(const std::filesystem::path& path);

}  // namespace xlacel::compile_cache
