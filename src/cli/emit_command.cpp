// `xlacel emit [-m MODEL] --graph prefill|decode|decode-logits|copy-slot|save-slot|
//  restore-slot|embed [--bucket N]
//  [--capacity N] [--slots N] [--weights f32|bf16|f16] [--tensor-parallel N] -o FILE.mlir`: the
//  StableHLO text of one graph (partitioned over N devices: with its sdy shardings, as `--backend
//  xla` compiles it).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cli/graph_flags.h"
#include "cli/model_loading.h"
#include "common/error.h"
#include "models/architecture.h"
#include "models/tensor_parallel.h"

namespace xlacel::cli {

namespace {

struct EmitOptions {
  GraphFlags graph;
  std::string output;
  int64_t tensor_parallel = 1;
};

void run_emit(const EmitOptions& options) {
  models::GraphOptions graph = graph_options(options.graph);
  ModelFiles model = open_model(options.graph.model);
  graph.tensor_parallel = options.tensor_parallel;
  std::string text =
      models::architecture_for(model.config(), model.path()).emit(model.config(), graph).mlir;
  if (options.output.empty() || options.output == "-") {
    fmt::print("{}", text);
    return;
  }
  // Written beside the target and renamed, so a failed write never leaves a partial module.
  std::string partial = options.output + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    if (!out) fail(options.output, "cannot write");
    out << text;
    if (!out.flush()) fail(options.output, "write failed");
  }
  std::filesystem::rename(partial, options.output);
  fmt::print(stderr, "wrote {} ({} bytes)\n", options.output, text.size());
}

}  // namespace

void add_emit_command(CLI::App& app) {
  auto* command = app.add_subcommand("emit", "Write one model graph as StableHLO text");
  auto options = std::make_shared<EmitOptions>();
  add_graph_flags(command, options->graph);
  command->add_option("-o,--output", options->output, "output file (default: stdout)");
  command
      ->add_option("--tensor-parallel", options->tensor_parallel,
                   "devices the graph is partitioned over (sdy shardings for XLA)")
      ->capture_default_str();
  command->callback([options] { run_emit(*options); });
}

}  // namespace xlacel::cli
