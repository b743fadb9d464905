// `xlacel tokenize -m MODEL [--ids] [--no-special] TEXT`.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_loading.h"

namespace xlacel::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool ids_only = false;
  bool no_special = false;
};

// Token texts are shown JSON-escaped so whitespace and control bytes stay visible.
std::string quoted(std::string_view token) {
  return Json(std::string(token)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void run_tokenize(const TokenizeOptions& options) {
  ModelFiles model = open_model(options.model, false);
  auto tokenizer = load_tokenizer(model);
  std::vector<int32_t> ids = tokenizer->encode(options.text, !options.no_special);
  if (options.ids_only) {
    std::string line;
    for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    fmt::print("{}\n", line);
    return;
  }
  for (int32_t id : ids) fmt::print("{:>6}  {}\n", id, quoted(tokenizer->token_text(id)));
  fmt::print("{} tokens\n", ids.size());
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* command = app.add_subcommand("tokenize", "Encode text to token ids");
  auto options = std::make_shared<TokenizeOptions>();
  command->add_option("-m,--model", options->model, "GGUF file or HF model directory");
  command->add_flag("--ids", options->ids_only, "print only the space-separated ids");
  command->add_flag("--no-special", options->no_special,
                    "do not add the model's special tokens (e.g. BOS)");
  command->add_option("text", options->text, "text to encode")->required();
  command->callback([options] { run_tokenize(*options); });
}

}  // namespace xlacel::cli
