#pragma once
// A read-only memory map of a whole file. Tensor data is read straight from the mapping, so
// loading a model copies nothing until a consumer asks for bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace xlacel {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  // Whether `range` lies within this mapping.
  bool holds(std::span<const std::byte> range) const;
  // Drops the whole pages of `range` (bytes of this mapping; others are ignored) from the
  // process's resident set, once their contents are copied where they are used: a later read
  // brings them back from the page cache. Keeps a loaded model's RSS near its device copy.
  void release(std::span<const std::byte> range) const;

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace xlacel
