#include "cli/prompt_input.h"

#include "common/error.h"
#include "engine/chat_images.h"
#include "engine/image_prompt.h"
#include "engine/model_images.h"

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

namespace {

// The prompt; with `model`, its images too (without: image parts stay in the messages as given).
Prompt build_prompt(const engine::ModelText& text, const ModelFiles* model,
                    const PromptInput& input) {
  const int given = !input.text.empty() + !input.chat.empty() + !input.messages_path.empty();
  if (given != 1) fail("prompt", "give exactly one of -p TEXT, --chat TEXT, --messages FILE");
  std::vector<engine::ImageFile> files;
  for (const std::string& path : input.images) files.push_back(engine::read_image_file(path));
  Conversation conversation;
  if (!input.messages_path.empty()) {
    conversation = read_messages_file(input.messages_path);
    if (!files.empty()) {
      fail("--image", "goes with -p or --chat; a messages file gives its images as image parts");
    }
    if (model != nullptr) {
      files = naming_file(input.messages_path, [&] {
        return engine::take_image_parts(conversation.messages, {.local_files = true});
      });
    }
  }
  Prompt result;
  engine::PreparedImages images;
  if (!files.empty()) {
    if (model == nullptr || !engine::has_vision(*model)) {
      fail("--image",
           "the model reads text only (no vision tower; a GGUF model takes its image encoder from "
           "--mmproj FILE)");
    }
    images = engine::ModelImages(*model).prepare(files);
    result.image_pixels = images.pixels;
  }
  if (!input.text.empty()) {
    std::string raw = input.text;
    const std::string_view placeholder =
        files.empty() ? std::string_view() : engine::image_placeholder(*model->config().vision);
    if (!files.empty() && raw.find(placeholder) == std::string::npos) {
      std::string placeholders;
      for (std::size_t i = 0; i < files.size(); ++i) placeholders += placeholder;
      raw = placeholders + raw;
    }
    result.ids = text.encode_text_with_images(raw, images.layouts);
    return result;
  }
  if (!input.chat.empty()) {
    const Json content = engine::user_content(input.chat, files.size());
    result.ids = text.encode_chat(Json::array({Json{{"role", "user"}, {"content", content}}}),
                                  Json::object(), nullptr, images.layouts);
    return result;
  }
  result.ids = naming_file(input.messages_path, [&] {
    return text.encode_chat(conversation.messages, conversation.extra_context, nullptr,
                            images.layouts);
  });
  return result;
}

}  // namespace

std::vector<int32_t> prompt_ids(const engine::ModelText& text, const PromptInput& input) {
  PromptInput without_images = input;
  without_images.images.clear();
  return build_prompt(text, nullptr, without_images).ids;
}

Prompt prompt(const engine::ModelText& text, const ModelFiles& model, const PromptInput& input) {
  return build_prompt(text, &model, input);
}

}  // namespace xlacel::cli
