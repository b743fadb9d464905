#pragma once
// A content-addressed on-disk cache of compiled modules. The key is XXH3-128 over the MLIR
// text, the compiler's name and identity, the target's identity and the complete flag list;
// an entry is "<dir>/<key><ext>" plus its "<key>.json" sidecar (cache_entry.h). Entries are
// written atomically, verified against their checksum on every lookup (a corrupt or truncated
// one is recompiled, never trusted), and concurrent writers of one key are safe: each writes
// its own temporaries and the last rename wins. Each compiler that stores an entry also leaves its
// identity in the directory, so a machine without that compiler can still find the entries
// (recorded_compiler.h).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "compile_cache/compiler.h"

namespace xlacel::compile_cache {

struct CompileRequest {
  std::string_view mlir;
  std::string source;  // names the input in errors and in the sidecar
  CompileTarget target;
};

struct CompileResult {
  std::filesystem::path artifact;  // the verified module, ready to load
  std::string key;                 // 32 hex digits
  bool hit = false;
  double seconds = 0;          // wall time of this call (lookup and verification, or compile)
  double compile_seconds = 0;  // the compiler's wall time (on a hit: as recorded at the miss)
  std::string discarded;       // why an existing entry was not trusted (empty: none was there)
};

class CompileCache {
 public:
  // $XLACEL_CACHE/compiled, else ~/.cache/xlacel/compiled.
  static std::filesystem::path default_directory();

  // An empty directory means default_directory().
  explicit CompileCache(std::filesystem::path directory = {});

  const std::filesystem::path& directory() const { return directory_; }

  std::string key(Compiler& compiler, const CompileRequest& request) const;

  // The entry's artifact when present and intact; never compiles.
  std::optional<std::filesystem::path> lookup(Compiler& compiler,
                                              const CompileRequest& request) const;

  // The cached artifact, compiling (and storing) it on a miss. Throws the compiler's Error.
  CompileResult get_or_compile(Compiler& compiler, const CompileRequest& request);

 private:
  void ensure_directory() const;
  // Writes "<dir>/<compiler>.identity" (recorded_compiler.h) unless it already holds it.
  void record_identity(Compiler& compiler) const;

  std::filesystem::path directory_;
};

}  // namespace xlacel::compile_cache
