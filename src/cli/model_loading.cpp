#include "cli/model_loading.h"

#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "models/architecture.h"

namespace xlacel::cli {

std::string default_model_path() {
  if (const char* path = std::getenv("XLACEL_MODEL"); path != nullptr && *path != '\0') {
    return path;
  }
  std::string cache;
  if (const char* dir = std::getenv("XLACEL_CACHE"); dir != nullptr && *dir != '\0') {
    cache = dir;
  } else {
    const char* home = std::getenv("HOME");
    cache = std::string(home != nullptr ? home : ".") + "/.cache/xlacel";
  }
  return cache + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

ModelFiles open_model(const std::string& path, bool runnable, const std::string& mmproj) {
  std::string model_path = path;
  if (model_path.empty()) {
    model_path = default_model_path();
    if (!std::filesystem::exists(model_path)) {
      fail(model_path, "default model not found; run scripts/setup or pass -m MODEL");
    }
  }
  ModelFiles model =
      mmproj.empty() ? ModelFiles::open(model_path) : ModelFiles::open(model_path, mmproj);
  if (runnable) models::architecture_for(model.config(), model.path());  // else Error
  return model;
}

}  // namespace xlacel::cli
