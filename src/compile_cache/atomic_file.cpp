#include "compile_cache/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "common/error.h"

namespace xlacel::compile_cache {

namespace fs = std::filesystem;

namespace {

void sync_path(const fs::path& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(path.string(), "cannot open to sync: {}", std::strerror(errno));
  if (::fsync(fd) != 0) {
    int saved = errno;
    ::close(fd);
    fail(path.string(), "fsync failed: {}", std::strerror(saved));
  }
  ::close(fd);
}

}  // namespace

TempFile::TempFile(const fs::path& dir, std::string_view stem, std::string_view suffix) {
  std::string pattern =
      (dir / (std::string(kTemporaryPrefix) + std::string(stem) + "-XXXXXX")).string() +
      std::string(suffix);
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkostemps(name.data(), static_cast<int>(suffix.size()), O_CLOEXEC);
  if (fd < 0) fail(dir.string(), "cannot create a temporary file: {}", std::strerror(errno));
  // mkstemp creates the file 0600; cache entries are as readable as any file this process makes.
  static const mode_t mode = [] {
    mode_t mask = ::umask(0);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  ::fchmod(fd, mode);
  ::close(fd);
  path_ = name.data();
}

TempFile::~TempFile() {
  if (!committed_) {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
}

void TempFile::write(std::string_view content) {
  int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) fail(path_.string(), "cannot open for writing: {}", std::strerror(errno));
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t wrote = ::write(fd, data, left);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) {
      int saved = errno;
      ::close(fd);
      fail(path_.string(), "write failed: {}", std::strerror(saved));
    }
    data += wrote;
    left -= static_cast<std::size_t>(wrote);
  }
  if (::close(fd) != 0) fail(path_.string(), "write failed: {}", std::strerror(errno));
}

void TempFile::commit(const fs::path& destination) {
  sync_path(path_, O_RDONLY);
  if (::rename(path_.c_str(), destination.c_str()) != 0) {
    fail(destination.string(), "cannot rename {} into place: {}", path_.string(),
         std::strerror(errno));
  }
  committed_ = true;
  sync_directory(destination.parent_path());
}

void sync_directory(const fs::path& dir) {
  sync_path(dir.empty() ? fs::path(".") : dir, O_RDONLY | O_DIRECTORY);
}

void remove_stale_temporaries(const fs::path& dir, std::chrono::seconds age) {
  // Best effort: a directory that cannot be listed just keeps its temporaries.
  std::error_code error;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with(kTemporaryPrefix)) continue;
    std::error_code ignored;
    auto modified = it->last_write_time(ignored);
    if (ignored || now - modified < age) continue;
    fs::remove(it->path(), ignored);  // another process may have removed it first
  }
}

}  // namespace xlacel::compile_cache
