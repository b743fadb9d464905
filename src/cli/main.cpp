// xlacel: the command-line entry point. Every user-caused problem ends as one line on stderr
// and exit status 1.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"xlacel: LLM inference through StableHLO on OpenXLA compilers"};
  app.require_subcommand(1);
  xlacel::cli::add_inspect_command(app);
  xlacel::cli::add_tokenize_command(app);
  xlacel::cli::add_chat_template_command(app);
  xlacel::cli::add_emit_command(app);
  xlacel::cli::add_compile_command(app);
  xlacel::cli::add_generate_command(app);
  xlacel::cli::add_chat_command(app);
  xlacel::cli::add_bench_command(app);
  xlacel::cli::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const xlacel::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "xlacel: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "xlacel: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
