// `xlacel chat-template -m MODEL --messages FILE.json [--add-generation-prompt]`.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/prompt_input.h"

namespace xlacel::cli {

namespace {

struct ChatTemplateCommandOptions {
  std::string model;
  std::string messages_path;
  bool add_generation_prompt = false;
};

void run_chat_template(const ChatTemplateCommandOptions& options) {
  ModelFiles model = open_model(options.model, false);
  engine::ModelText text(model);
  fmt::print("{}",
             render_messages_file(text, options.messages_path, options.add_generation_prompt));
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto* command = app.add_subcommand("chat-template", "Render the model's chat template");
  auto options = std::make_shared<ChatTemplateCommandOptions>();
  command->add_option("-m,--model", options->model, "GGUF file or HF model directory");
  command
      ->add_option("--messages", options->messages_path,
                   "JSON file: a list of {role, content} messages")
      ->required();
  command->add_flag("--add-generation-prompt", options->add_generation_prompt,
                    "end with the assistant's turn opener");
  command->callback([options] { run_chat_template(*options); });
}

}  // namespace xlacel::cli
