#pragma once
// One cache entry on disk: "<key><ext>" (the artifact, byte for byte what the compiler wrote,
// so runtimes load it directly) and "<key>.json", the sidecar that vouches for it: the
// artifact's size and XXH3-128 checksum plus what produced it. The sidecar is renamed into
// place after the artifact, so it is the entry's commit record; an artifact is trusted only
// when it matches its sidecar.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace xlacel::compile_cache {

inline constexpr int kEntryFormat = 1;

struct EntryRecord {
  std::string key;
  uint64_t size = 0;
  std::string checksum;  // XXH3-128 of the artifact, hex
  std::string compiler;  // name and first line of its identity, for people
  std::string target;
  std::vector<std::string> flags;
  std::string source;
  double compile_seconds = 0;
};

struct EntryPaths {
  std::filesystem::path artifact;
  std::filesystem::path sidecar;
};

EntryPaths entry_paths(const std::filesystem::path& dir, const std::string& key,
                       const std::string& extension);

// Checks the entry against its sidecar. Returns the record when the artifact is intact;
// otherwise nullopt, with `problem` saying why when there is something to discard (empty when
// there simply is no entry).
std::optional<EntryRecord> verify_entry(const EntryPaths& paths, const std::string& key,
                                        std::string& problem);

// Atomically writes the sidecar for an artifact already renamed into place.
void write_sidecar(const EntryPaths& paths, const EntryRecord& record);

}  // namespace xlacel::compile_cache
