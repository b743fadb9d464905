#pragma once
// Shared by tests/models_*_test.cpp: the venv, shell quoting, running a command, and op counts
// of emitted StableHLO text.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace xlacel::testing {

inline std::filesystem::path venv() {
  if (const char* dir = std::getenv("XLACEL_VENV")) return dir;
  return std::filesystem::path(XLACEL_SOURCE_DIR) / ".venv";
}

inline std::string quote(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct CommandResult {
  int status = 0;
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

inline CommandResult run_command(const std::string& command, const std::filesystem::path& log) {
  auto start = std::chrono::steady_clock::now();
  int status = std::system(fmt::format("{} > {} 2>&1", command, quote(log)).c_str());
  return {status, read_text(log),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// Ops by name ("stablehlo.add" -> 12) in generic-form MLIR text, reduce bodies included
// (their stablehlo.return terminators are not counted).
inline std::map<std::string, int> op_counts(const std::string& text) {
  std::map<std::string, int> counts;
  for (size_t at = text.find("\"stablehlo."); at != std::string::npos;
       at = text.find("\"stablehlo.", at + 1)) {
    size_t end = text.find('"', at + 1);
    std::string name = text.substr(at + 1, end - at - 1);
    if (name != "stablehlo.return") ++counts[name];
  }
  return counts;
}

inline int total_ops(const std::map<std::string, int>& counts) {
  int total = 0;
  for (const auto& [name, count] : counts) total += count;
  return total;
}

inline std::string format_op_counts(const std::map<std::string, int>& counts) {
  std::string text = fmt::format("{} ops:", total_ops(counts));
  for (const auto& [name, count] : counts) text += fmt::format(" {}={}", name.substr(10), count);
  return text;
}

#define XLACEL_REQUIRE_IREE_PYTHON()                                                         \
  if (!std::filesystem::exists(::xlacel::testing::venv() / "bin" / "iree-compile"))          \
    GTEST_SKIP() << "iree-compile not found in " << ::xlacel::testing::venv()                \
                 << " (run scripts/setup, or set XLACEL_VENV)";                              \
  if (std::system((::xlacel::testing::quote(::xlacel::testing::venv() / "bin" / "python") +  \
                   " -c 'import iree.runtime, iree.compiler, ml_dtypes, numpy' 2>/dev/null") \
                      .c_str()) != 0)                                                        \
  GTEST_SKIP() << "the venv's python cannot import iree.runtime, iree.compiler, ml_dtypes, numpy"

}  // namespace xlacel::testing
