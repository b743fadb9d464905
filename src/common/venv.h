#pragma once
// Where the project's Python virtual environment (scripts/setup makes .venv) is, for the tools
// and runtimes pip installs into it: iree-compile, iree.runtime, PJRT plugins.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel {

// The first of these that contains `relative` (a file or directory inside the venv), as the
// full path: $XLACEL_VENV, $VIRTUAL_ENV, a .venv in the current directory or above it, then a
// .venv in the running program's directory or above it. When $XLACEL_VENV is set it is the
// only place looked at (so a user can point at one venv, and tests at a broken one).
std::optional<std::filesystem::path> find_in_venv(const std::filesystem::path& relative);

// The venv's site-packages directories (lib/python3.X/site-packages; the X is whatever made it).
std::vector<std::filesystem::path> venv_site_packages();

// The version pip installed of `distribution` ("iree-base-compiler") in the venv, from its
// .dist-info directory's name; nullopt when it is not installed.
std::optional<std::string> venv_package_version(std::string_view distribution);

// For "not found" messages.
inline constexpr const char* kVenvSearchDescription =
    "$XLACEL_VENV, else $VIRTUAL_ENV and .venv above the current directory and the program";

}  // namespace xlacel
