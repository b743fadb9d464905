#pragma once
// Where the project's Python virtual environment (scripts/setup makes .venv) is, for the tools
// and runtimes pip installs into it: iree-compile, iree.runtime, PJRT plugins.
#include <filesystem>
#include <optional>
#include <string>

namespace xlacel {

// The first of these that contains `relative` (a file or directory inside the venv), as the
// full path: $XLACEL_VENV, $VIRTUAL_ENV, a .venv in the current directory or above it, then a
// .venv in the running program's directory or above it. When $XLACEL_VENV is set it is the
// only place looked at (so a user can point at one venv, and tests at a broken one).
std::optional<std::filesystem::path> find_in_venv(const std::filesystem::path& relative);

// For "not found" messages.
inline constexpr const char* kVenvSearchDescription =
    "$XLACEL_VENV, else $VIRTUAL_ENV and .venv above the current directory and the program";

}  // namespace xlacel
