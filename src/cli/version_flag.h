#pragma once
// `xlacel --version`: the program's version and commit, and the versions of the runtimes it
// finds (IREE's packages, the PJRT plugins).
#include <CLI/CLI.hpp>

namespace xlacel::cli {

void add_version_flag(CLI::App& app);

}  // namespace xlacel::cli
