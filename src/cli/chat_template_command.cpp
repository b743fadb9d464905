// `xlacel chat-template -m MODEL --messages FILE.json [--add-generation-prompt]`.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "common/error.h"
#include "common/json_file.h"

namespace xlacel::cli {

namespace {

struct ChatTemplateCommandOptions {
  std::string model;
  std::string messages_path;
  bool add_generation_prompt = false;
};

// The file holds a list of messages, or an object with "messages" and extra template variables.
void check_messages(const Json& messages, const std::string& path) {
  if (!messages.is_array()) fail(path, "expected a list of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      fail(path, "message {} needs a string 'role'", i);
    }
  }
}

void run_chat_template(const ChatTemplateCommandOptions& options) {
  Json input = read_json_file(options.messages_path);
  ModelFiles model = open_model(options.model);
  ChatTemplate chat_template = load_chat_template(model);
  ChatTemplateOptions render_options =
      chat_template_options(model, options.add_generation_prompt);
  Json messages = input;
  if (input.is_object()) {
    if (!input.contains("messages")) fail(options.messages_path, "no 'messages' list");
    messages = input["messages"];
    for (const auto& [key, value] : input.items()) {
      if (key != "messages") render_options.extra_context[key] = value;
    }
  }
  check_messages(messages, options.messages_path);
  fmt::print("{}", chat_template.render(messages, render_options));
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto* command = app.add_subcommand("chat-template", "Render the model's chat template");
  auto options = std::make_shared<ChatTemplateCommandOptions>();
  command->add_option("-m,--model", options->model, "GGUF file or HF model directory");
  command->add_option("--messages", options->messages_path,
                      "JSON file: a list of {role, content} messages")
      ->required();
  command->add_flag("--add-generation-prompt", options->add_generation_prompt,
                    "end with the assistant's turn opener");
  command->callback([options] { run_chat_template(*options); });
}

}  // namespace xlacel::cli
