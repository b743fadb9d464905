#include "common/venv.h"

#include <cstdlib>
#include <system_error>

namespace xlacel {

namespace fs = std::filesystem;

namespace {

bool path_exists(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

std::optional<fs::path> from_variable(const char* variable, const fs::path& relative) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  fs::path candidate = fs::path(value) / relative;
  if (path_exists(candidate)) return candidate;
  return std::nullopt;
}

std::optional<fs::path> walk_up(fs::path dir, const fs::path& relative) {
  while (!dir.empty()) {
    fs::path candidate = dir / ".venv" / relative;
    if (path_exists(candidate)) return candidate;
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

}  // namespace

std::optional<fs::path> find_in_venv(const fs::path& relative) {
  if (const char* chosen = std::getenv("XLACEL_VENV"); chosen != nullptr && *chosen != '\0') {
    return from_variable("XLACEL_VENV", relative);
  }
  if (auto found = from_variable("VIRTUAL_ENV", relative)) return found;
  std::error_code error;
  if (fs::path cwd = fs::current_path(error); !error) {
    if (auto found = walk_up(cwd, relative)) return found;
  }
  if (fs::path self = fs::read_symlink("/proc/self/exe", error); !error) {
    if (auto found = walk_up(self.parent_path(), relative)) return found;
  }
  return std::nullopt;
}

}  // namespace xlacel
