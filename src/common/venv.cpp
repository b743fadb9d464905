#include "common/venv.h"

#include <algorithm>
#include <cctype>
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

std::vector<fs::path> venv_site_packages() {
  std::vector<fs::path> dirs;
  auto lib = find_in_venv("lib");
  if (!lib) return dirs;
  std::error_code error;
  for (fs::directory_iterator it(*lib, error), end; !error && it != end; it.increment(error)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    fs::path site = it->path() / "site-packages";
    if (fs::is_directory(site, error)) dirs.push_back(site);
  }
  return dirs;
}

std::optional<std::string> venv_package_version(std::string_view distribution) {
  // pip names the directory <name>-<version>.dist-info with the name's - and . as '_'; the
  // comparison ignores case.
  auto lowered = [](std::string_view text) {
    std::string out;
    for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string prefix = lowered(distribution) + '-';
  std::replace(prefix.begin(), prefix.end() - 1, '-', '_');
  std::replace(prefix.begin(), prefix.end(), '.', '_');
  const std::string suffix = ".dist-info";
  for (const fs::path& site : venv_site_packages()) {
    std::error_code error;
    for (fs::directory_iterator it(site, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (lowered(name).starts_with(prefix) && name.ends_with(suffix)) {
        return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
      }
    }
  }
  return std::nullopt;
}

}  // namespace xlacel
