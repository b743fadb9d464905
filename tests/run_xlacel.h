#pragma once
// Runs the built xlacel program as a user would, capturing exit status, stdout and stderr.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace xlacel::testing {

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `env_prefix`: shell assignments or `env -u ...` placed before the program; arguments are
// single-quoted; stdin is `stdin_path` (/dev/null unless given); stdout/stderr go through files
// in `scratch`.
inline ProgramRun run_xlacel(const std::filesystem::path& scratch,
                             const std::vector<std::string>& args,
                             const std::string& env_prefix = "",
                             const std::filesystem::path& stdin_path = "/dev/null") {
  std::string command = env_prefix + " " + std::string(XLACEL_BINARY_DIR) + "/xlacel";
  for (const std::string& arg : args) {
    std::string quoted = "'";
    for (char c : arg) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  std::filesystem::path out = scratch / "stdout", err = scratch / "stderr";
  command += " >" + out.string() + " 2>" + err.string() + " <" + stdin_path.string();
  int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

}  // namespace xlacel::testing
