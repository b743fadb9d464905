#include "compile_cache/compile_cache.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include "common/error.h"
#include "compile_cache/atomic_file.h"
#include "compile_cache/cache_entry.h"
#include "compile_cache/hash.h"
#include "compile_cache/recorded_compiler.h"

namespace xlacel::compile_cache {

namespace fs = std::filesystem;

namespace {

// Bumped whenever the key's composition or the entry layout changes.
constexpr std::string_view kKeyVersion = "xlacel-compile-cache-v1";

// Temporaries older than this were left by a crashed writer.
constexpr std::chrono::hours kStaleTemporaryAge{24};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A multi-line identity as one line: its non-empty lines, trimmed, joined by "; ".
std::string one_line(std::string_view text) {
  std::string joined;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (!joined.empty()) joined += "; ";
    joined += line;
  }
  return joined;
}

}  // namespace

fs::path CompileCache::default_directory() {
  if (const char* dir = std::getenv("XLACEL_CACHE"); dir != nullptr && *dir != '\0') {
    return fs::path(dir) / "compiled";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : ".") / ".cache" / "xlacel" / "compiled";
}

CompileCache::CompileCache(fs::path directory)
    : directory_(directory.empty() ? default_directory() : std::move(directory)) {}

void CompileCache::ensure_directory() const {
  std::error_code error;
  fs::create_directories(directory_, error);
  if (error) fail(directory_.string(), "cannot create the compile cache: {}", error.message());
}

void CompileCache::record_identity(Compiler& compiler) const {
  // So that a machine without this compiler can still find the entries (recorded_compiler.h).
  const fs::path path = identity_record_path(directory_, compiler.name());
  const std::string& identity = compiler.identity();
  std::error_code error;
  if (fs::file_size(path, error) == identity.size() && !error) {
    std::ifstream in(path, std::ios::binary);
    std::string recorded(identity.size(), '\0');
    if (in.read(recorded.data(), static_cast<std::streamsize>(recorded.size())) &&
        recorded == identity) {
      return;
    }
  }
  TempFile file(directory_, compiler.name(), ".identity");
  file.write(identity);
  file.commit(path);
}

std::string CompileCache::key(Compiler& compiler, const CompileRequest& request) const {
  Hasher hasher;
  hasher.field(kKeyVersion);
  hasher.field(compiler.name());
  hasher.field(compiler.identity());
  hasher.field(request.target.name);
  hasher.field(request.target.identity);
  hasher.field(static_cast<uint64_t>(request.target.flags.size()));
  for (const std::string& flag : request.target.flags) hasher.field(flag);
  hasher.field(request.mlir);
  return hasher.digest().hex();
}

std::optional<fs::path> CompileCache::lookup(Compiler& compiler,
                                             const CompileRequest& request) const {
  std::string key_hex = key(compiler, request);
  EntryPaths paths = entry_paths(directory_, key_hex, compiler.artifact_extension());
  std::string problem;
  if (verify_entry(paths, key_hex, problem)) return paths.artifact;
  return std::nullopt;
}

CompileResult CompileCache::get_or_compile(Compiler& compiler, const CompileRequest& request) {
  Clock::time_point start = Clock::now();
  CompileResult result;
  result.key = key(compiler, request);
  EntryPaths paths = entry_paths(directory_, result.key, compiler.artifact_extension());
  result.artifact = paths.artifact;

  if (auto record = verify_entry(paths, result.key, result.discarded)) {
    result.hit = true;
    result.compile_seconds = record->compile_seconds;
    result.seconds = seconds_since(start);
    return result;
  }

  // A miss (or an entry not to be trusted, which the new one replaces by rename: deleting it
  // could remove a fresh entry another process just committed).
  ensure_directory();
  remove_stale_temporaries(directory_, kStaleTemporaryAge);
  TempFile artifact(directory_, result.key, compiler.artifact_extension());
  Clock::time_point compile_start = Clock::now();
  compiler.compile({request.mlir, request.source, &request.target, artifact.path()});
  result.compile_seconds = seconds_since(compile_start);

  EntryRecord record;
  record.key = result.key;
  record.size = fs::file_size(artifact.path());
  record.checksum = hash_file(artifact.path()).hex();
  record.compiler = compiler.name() + ": " + one_line(compiler.identity());
  record.target = request.target.name;
  record.flags = request.target.flags;
  record.source = request.source;
  record.compile_seconds = result.compile_seconds;
  artifact.commit(paths.artifact);  // the artifact first: the sidecar commits the entry
  write_sidecar(paths, record);
  record_identity(compiler);

  result.seconds = seconds_since(start);
  return result;
}

}  // namespace xlacel::compile_cache
