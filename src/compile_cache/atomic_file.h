#pragma once
// Crash-safe files: content goes to a uniquely named temporary in the destination's directory,
// is fsynced, and only then renamed over the destination (rename is atomic within a file
// system, so readers see the old file or the whole new one, never a part). Concurrent writers
// each use their own temporary; the last rename wins.
#include <chrono>
#include <filesystem>
#include <string_view>

namespace xlacel::compile_cache {

// Temporary names start with this, so stale ones left by a crash can be found and removed.
inline constexpr std::string_view kTemporaryPrefix = ".tmp-";

class TempFile {
 public:
  // Creates an empty, uniquely named file "<dir>/.tmp-<stem>-XXXXXX<suffix>".
  TempFile(const std::filesystem::path& dir, std::string_view stem, std::string_view suffix);
  ~TempFile();  // removes the file unless committed
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

  void write(std::string_view content);  // replaces the file's content
  // fsyncs the file, renames it to `destination` (same directory) and fsyncs the directory.
  void commit(const std::filesystem::path& destination);

 private:
  std::filesystem::path path_;
  bool committed_ = false;
};

void sync_directory(const std::filesystem::path& dir);

// Removes temporaries in `dir` last modified more than `age` ago (left by crashed writers).
void remove_stale_temporaries(const std::filesystem::path& dir, std::chrono::seconds age);

}  // namespace xlacel::compile_cache
