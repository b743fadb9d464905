#pragma once
// Where tests find their inputs: checked-in data under tests/data, and the default model that
// scripts/setup fetched (XLACEL_MODEL overrides). Tests that need the model skip without it.
// Tests compile into the program's own cache (DeviceOptions::compile_cache_dir left empty:
// $XLACEL_CACHE/compiled), which the CLI and server runs they start use too, so that a graph one
// test compiled loads for every other; only the tests of caching itself keep a cache apart.
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

// Where scripts/setup puts the models it fetches.
inline std::filesystem::path model_cache_dir() {
  if (const char* dir = std::getenv("XLACEL_CACHE")) return std::filesystem::path(dir) / "models";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "") / ".cache/xlacel/models";
}

inline std::string default_model_path() {
  if (const char* path = std::getenv("XLACEL_MODEL")) return path;
  return (model_cache_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
}

// Gemma 3 270M Q4_K_M: a sentencepiece ("llama") GGUF vocabulary, beside the default model.
inline std::filesystem::path gemma_model_path() {
  return model_cache_dir() / "gemma-3-270m-q4_k_m.gguf";
}

}  // namespace xlacel::testing

// Skips the current test (GTEST_SKIP with the reason) when the default model is absent.
#define XLACEL_REQUIRE_DEFAULT_MODEL(path_variable)                          \
  const std::string path_variable = ::xlacel::testing::default_model_path(); \
  if (!std::filesystem::exists(path_variable))                               \
  GTEST_SKIP() << "default model not found at " << path_variable << " (run scripts/setup)"
