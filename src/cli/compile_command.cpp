// `xlacel compile [-m MODEL] --graph prefill|decode|decode-logits|copy-slot|save-slot|
//  restore-slot|embed [--bucket N]
//  [--capacity N] [--slots N] [--weights f32|bf16|f16] [--target llvm-cpu|cuda] [--cuda-sm sm_80]
//  [--target-triple aarch64-linux-gnu --cpu generic] [--opt-level O3]
//  [--output-format text|json]`, or `xlacel compile --mlir FILE [--target ...]`: one module
// compiled with iree-compile through the compile cache ($XLACEL_CACHE/compiled). Prints the
// artifact's path, hit or miss, and the compile time.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

#include "cli/commands.h"
#include "cli/graph_flags.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "common/error.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/iree_compiler.h"
#include "models/architecture.h"
#include "models/graph_options.h"

namespace xlacel::cli {

namespace {

struct CompileOptions {
  GraphFlags graph;
  std::string mlir;  // an existing StableHLO file instead of an emitted graph
  compile_cache::IreeTargetOptions target;
  std::string output_format = "text";
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  std::string text{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) fail(path, "cannot read");
  return text;
}

void run_compile(const CompileOptions& options) {
  const bool as_json = json_output(options.output_format);
  compile_cache::CompileTarget target = compile_cache::iree_target(options.target);
  compile_cache::IreeCompiler compiler = compile_cache::IreeCompiler::from_environment();

  std::string mlir;
  std::string source;
  if (!options.mlir.empty()) {
    mlir = read_text(options.mlir);
    source = options.mlir;
  } else {
    models::GraphOptions graph = graph_options(options.graph);
    ModelFiles model = open_model(options.graph.model);
    mlir = models::architecture_for(model.config(), model.path()).emit(model.config(), graph).mlir;
    // Named like a file, as diagnostics print it: "<model>.<graph>.mlir:LINE:COL: error: ...".
    source = fmt::format("{}.{}.mlir", model.name(), models::graph_name(graph));
  }

  const std::string target_name = target.name;
  compile_cache::CompileCache cache;
  compile_cache::CompileResult result =
      cache.get_or_compile(compiler, {mlir, source, std::move(target)});

  if (as_json) {
    nlohmann::json json = {{"artifact", result.artifact.string()},
                           {"key", result.key},
                           {"cache", result.hit ? "hit" : "miss"},
                           {"compile_seconds", result.compile_seconds},
                           {"seconds", result.seconds},
                           {"target", target_name},
                           {"source", source}};
    if (!result.discarded.empty()) json["discarded"] = result.discarded;
    fmt::print("{}\n", json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  // "compile time" is this call's wall time: the compile on a miss, the verified lookup on a hit.
  fmt::print("artifact: {}\n", result.artifact.string());
  if (result.hit) {
    fmt::print("cache: hit\n");
    fmt::print("compile time: {:.3f} s (cached; the compile took {:.3f} s)\n", result.seconds,
               result.compile_seconds);
  } else {
    fmt::print("cache: miss{}\n",
               result.discarded.empty() ? "" : " (rebuilt: " + result.discarded + ")");
    fmt::print("compile time: {:.3f} s\n", result.seconds);
  }
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "compile",
      "Compile a model graph (or a StableHLO file) with iree-compile, through the cache");
  auto options = std::make_shared<CompileOptions>();
  std::vector<CLI::Option*> graph_flags = add_graph_flags(command, options->graph);
  auto* mlir = command->add_option("--mlir", options->mlir,
                                   "compile this StableHLO file instead of a model graph");
  for (CLI::Option* flag : graph_flags) mlir->excludes(flag);
  command->add_option("--target", options->target.backend, "llvm-cpu (this machine) or cuda")
      ->capture_default_str();
  command->add_option("--cuda-sm", options->target.cuda_sm, "CUDA architecture for --target cuda")
      ->capture_default_str();
  command
      ->add_option(
          "--target-triple", options->target.triple,
          "llvm-cpu: cross-compile for another machine, e.g. aarch64-linux-gnu (with --cpu)")
      ->capture_default_str();
  command
      ->add_option("--cpu", options->target.cpu,
                   "llvm-cpu: the CPU to compile for: host (this one), or an LLVM CPU name "
                   "(x86-64-v3; for --target-triple aarch64-linux-gnu: generic, neoverse-n1, ...)")
      ->capture_default_str();
  command->add_option("--opt-level", options->target.opt_level, "O0, O1, O2 or O3")
      ->capture_default_str();
  command->add_option("--output-format", options->output_format, "text or json")
      ->capture_default_str();
  command->callback([options] { run_compile(*options); });
}

}  // namespace xlacel::cli
