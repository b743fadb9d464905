#include "cli/prompt_input.h"

#include "cli/model_loading.h"
#include "common/error.h"

namespace xlacel::cli {

namespace {

void check_messages(const Json& messages, const std::string& path) {
  if (!messages.is_array()) fail(path, "expected a list of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      fail(path, "message {} needs a string 'role'", i);
    }
  }
}

}  // namespace

std::string render_messages_file(const ModelFiles& model, const std::string& path,
                                 bool add_generation_prompt) {
  Json input = read_json_file(path);
  ChatTemplate chat_template = load_chat_template(model);
  ChatTemplateOptions options = chat_template_options(model, add_generation_prompt);
  Json messages = input;
  if (input.is_object()) {
    if (!input.contains("messages")) fail(path, "no 'messages' list");
    messages = input["messages"];
    for (const auto& [key, value] : input.items()) {
      if (key != "messages") options.extra_context[key] = value;
    }
  }
  check_messages(messages, path);
  return chat_template.render(messages, options);
}

std::string render_user_turn(const ModelFiles& model, const std::string& text) {
  Json messages = Json::array({Json{{"role", "user"}, {"content", text}}});
  return load_chat_template(model).render(messages, chat_template_options(model, true));
}

std::vector<int32_t> prompt_ids(const ModelFiles& model, const Tokenizer& tokenizer,
                                const PromptInput& input) {
  const int given = !input.text.empty() + !input.chat.empty() + !input.messages_path.empty();
  if (given != 1) fail("prompt", "give exactly one of -p TEXT, --chat TEXT, --messages FILE");
  std::vector<int32_t> ids;
  if (!input.text.empty()) {
    ids = tokenizer.encode(input.text, true);
  } else if (!input.chat.empty()) {
    ids = tokenizer.encode(render_user_turn(model, input.chat), false);
  } else {
    ids = tokenizer.encode(render_messages_file(model, input.messages_path, true), false);
  }
  if (ids.empty()) fail("prompt", "the prompt has no tokens");
  return ids;
}

}  // namespace xlacel::cli
