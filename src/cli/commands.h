#pragma once
// Each subcommand registers its options on the CLI11 app and runs when selected.
#include <CLI/CLI.hpp>

namespace xlacel::cli {

void add_inspect_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_emit_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace xlacel::cli
