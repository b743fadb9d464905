#include "cli/prompt_input.h"

#include "common/error.h"

namespace xlacel::cli {

namespace {

struct Conversation {
  Json messages;
  Json extra_context = Json::object();
};

Conversation read_messages_file(const std::string& path) {
  Json input = read_json_file(path);
  Conversation conversation{input};
  if (input.is_object()) {
    if (!input.contains("messages")) fail(path, "no 'messages' list");
    conversation.messages = input["messages"];
    for (const auto& [key, value] : input.items()) {
      if (key != "messages") conversation.extra_context[key] = value;
    }
  }
  return conversation;
}

// Errors about the file's content name the file, then the field.
template <typename Body>
auto naming_file(const std::string& path, Body body) {
  try {
    return body();
  } catch (const Error& e) {
    fail(path, "{}", e.what());
  }
}

}  // namespace

std::string render_messages_file(const engine::ModelText& text, const std::string& path,
                                 bool add_generation_prompt) {
  Conversation conversation = read_messages_file(path);
  return naming_file(path, [&] {
    return text.render_chat(conversation.messages, conversation.extra_context,
                            add_generation_prompt);
  });
}

std::vector<int32_t> prompt_ids(const engine::ModelText& text, const PromptInput& input) {
  const int given = !input.text.empty() + !input.chat.empty() + !input.messages_path.empty();
  if (given != 1) fail("prompt", "give exactly one of -p TEXT, --chat TEXT, --messages FILE");
  if (!input.text.empty()) return text.encode_text(input.text);
  if (!input.chat.empty()) {
    return text.encode_chat(Json::array({Json{{"role", "user"}, {"content", input.chat}}}),
                            Json::object());
  }
  Conversation conversation = read_messages_file(input.messages_path);
  return naming_file(input.messages_path, [&] {
    return text.encode_chat(conversation.messages, conversation.extra_context);
  });
}

}  // namespace xlacel::cli
