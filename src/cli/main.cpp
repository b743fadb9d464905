// xlacel: the command-line entry point. Every user-caused problem ends as one line on stderr
// and exit status 1, flag-parsing problems included; --help and --version print to stdout and
// exit 0.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/field_flags.h"
#include "cli/version_flag.h"
#include "common/error.h"

namespace {

// stdout may hold generated text that did not end a line: finish it first, so that the error
// line starts a line of its own wherever both streams go.
int print_error(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "xlacel: {}\n", message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xlacel: LLM inference through StableHLO on OpenXLA compilers"};
  app.require_subcommand(1);
  xlacel::cli::add_version_flag(app);
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
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return print_error(fmt::format("{} (xlacel --help lists the commands and flags)", e.what()));
  } catch (const xlacel::FieldError& e) {
    return print_error(xlacel::cli::message_with_flag(e));
  } catch (const xlacel::Error& e) {
    return print_error(e.what());
  } catch (const std::exception& e) {
    return print_error(fmt::format("internal error: {}", e.what()));
  }
  return 0;
}
