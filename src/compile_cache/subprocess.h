#pragma once
// Runs a program directly (posix_spawn, no shell) and collects what it printed.
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::compile_cache {

struct ProcessResult {
  int exit_status = -1;  // the exit status, or -1 when killed by a signal
  int signal = 0;        // the signal that killed it, or 0
  std::string output;    // stdout and stderr interleaved as the program wrote them

  bool ok() const { return exit_status == 0; }
  std::string describe() const;  // "exit status 1" or "killed by signal 11 (Segmentation fault)"
};

// Runs argv[0] (a path; PATH is not searched) with argv, `input` on its stdin (a pipe, closed
// after the last byte; a program that exits without reading it all is no error here) and
// stdout+stderr captured through one pipe. Throws Error naming argv[0] when it cannot be
// started.
ProcessResult run_process(const std::vector<std::string>& argv, std::string_view input = {});

}  // namespace xlacel::compile_cache
