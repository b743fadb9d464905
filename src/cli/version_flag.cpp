#include "cli/version_flag.h"

#include <fmt/format.h>

#include "backends/backends.h"
#include "cli/build_version.h"

namespace xlacel::cli {

void add_version_flag(CLI::App& app) {
  app.set_version_flag(
      "--version",
      [] {
        std::string text = fmt::format("xlacel {} (commit {})", XLACEL_VERSION, XLACEL_COMMIT);
        for (const std::string& line : backends::runtime_versions()) text += "\n" + line;
        return text;
      },
      "print the version, the commit and the runtimes' versions, then exit");
}

}  // namespace xlacel::cli
