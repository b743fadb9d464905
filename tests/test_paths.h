#pragma once
// Where tests find their inputs: checked-in data under tests/data, and the default model that
// scripts/setup fetched (XLACEL_MODEL overrides). Tests that need the model skip without it.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace xlacel::testing {

inline std::filesystem::path test_data(const std::string& relative) {
  return std::filesystem::path(XLACEL_SOURCE_DIR) / "tests" / "data" / relative;
}

inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::path(XLACEL_BINARY_DIR) / "test-scratch" / name;
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string default_model_path() {
  if (const char* path = std::getenv("XLACEL_MODEL")) return path;
  std::string cache;
  if (const char* dir = std::getenv("XLACEL_CACHE")) {
    cache = dir;
  } else {
    const char* home = std::getenv("HOME");
    cache = std::string(home ? home : "") + "/.cache/xlacel";
  }
  return cache + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace xlacel::testing

// Skips the current test (GTEST_SKIP with the reason) when the default model is absent.
#define XLACEL_REQUIRE_DEFAULT_MODEL(path_variable)                                         \
  const std::string path_variable = ::xlacel::testing::default_model_path();                \
  if (!std::filesystem::exists(path_variable))                                              \
  GTEST_SKIP() << "default model not found at " << path_variable << " (run scripts/setup)"
