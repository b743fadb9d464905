#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace xlacel {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: {}", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int saved = errno;
    ::close(fd);
    fail(path, "cannot stat: {}", std::strerror(saved));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int saved = errno;
      ::close(fd);
      fail(path, "cannot map: {}", std::strerror(saved));
    }
    data_ = static_cast<const std::byte*>(mapping);
  }
  ::close(fd);
}

bool MappedFile::holds(std::span<const std::byte> range) const {
  const auto begin = reinterpret_cast<uintptr_t>(range.data());
  const auto base = reinterpret_cast<uintptr_t>(data_);
  return data_ != nullptr && begin >= base && begin + range.size() <= base + size_;
}

void MappedFile::release(std::span<const std::byte> range) const {
  if (!holds(range)) return;
  const auto begin = reinterpret_cast<uintptr_t>(range.data());
  const auto end = begin + range.size();
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // Advice only: a failure leaves the pages resident, which is what not asking does.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace xlacel
