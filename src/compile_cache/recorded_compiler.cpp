#include "compile_cache/recorded_compiler.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace xlacel::compile_cache {

namespace fs = std::filesystem;

fs::path identity_record_path(const fs::path& directory, const std::string& compiler_name) {
  return directory / (compiler_name + ".identity");
}

std::optional<RecordedCompiler> RecordedCompiler::from_cache(const fs::path& directory,
                                                             std::string name,
                                                             std::string extension,
                                                             std::string missing) {
  std::ifstream in(identity_record_path(directory, name), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream identity;
  identity << in.rdbuf();
  if (identity.str().empty()) return std::nullopt;
  return RecordedCompiler(directory, std::move(name), std::move(extension), identity.str(),
                          std::move(missing));
}

void RecordedCompiler::compile(const CompileJob& job) {
  fail(job.source, "not in the compile cache {} (made by {} elsewhere), and {}",
       directory_.string(), name_, missing_);
}

}  // namespace xlacel::compile_cache
