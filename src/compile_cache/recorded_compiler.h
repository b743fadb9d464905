#pragma once
// A compiler that is not installed, as a cache directory remembers it: on a machine that only
// runs what another one compiled (the GPU bundle, scripts/gpu-bundle, has no iree-compile), the
// cache's entries are still found by their keys, which need the compiler's identity. The cache
// records the identity of each compiler that stores an entry in it (CompileCache), and this
// compiler gives it back; compiling anything is an Error.
#include <filesystem>
#include <optional>
#include <string>

#include "compile_cache/compiler.h"

namespace xlacel::compile_cache {

// "<directory>/<compiler name>.identity": where a cache records a compiler's identity.
std::filesystem::path identity_record_path(const std::filesystem::path& directory,
                                           const std::string& compiler_name);

class RecordedCompiler : public Compiler {
 public:
  // The compiler `name` as recorded in `directory`, or nullopt when nothing is recorded there.
  // `missing` is the Error message compile() throws (why the real compiler is not there).
  static std::optional<RecordedCompiler> from_cache(const std::filesystem::path& directory,
                                                    std::string name, std::string extension,
                                                    std::string missing);

  std::string name() const override { return name_; }
  std::string artifact_extension() const override { return extension_; }
  const std::string& identity() override { return identity_; }
  // Throws Error "<source>: not in the compile cache <dir> (compiled by <name> elsewhere), and
  // <missing>".
  void compile(const CompileJob& job) override;

 private:
  RecordedCompiler(std::filesystem::path directory, std::string name, std::string extension,
                   std::string identity, std::string missing)
      : directory_(std::move(directory)),
        name_(std::move(name)),
        extension_(std::move(extension)),
        identity_(std::move(identity)),
        missing_(std::move(missing)) {}

  std::filesystem::path directory_;
  std::string name_;
  std::string extension_;
  std::string identity_;
  std::string missing_;
};

}  // namespace xlacel::compile_cache
