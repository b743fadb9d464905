#include "engine/model_text.h"

#include <fmt/format.h>

#include "common/error.h"

namespace xlacel::engine {

bool has_tokenizer(const ModelFiles& model) {
  // A GGUF written without a vocabulary (llama.cpp reads the model then, as transformers does)
  // lacks the key that names the tokenizer's kind.
  if (model.gguf() != nullptr) return model.gguf()->has("tokenizer.ggml.model");
  return !model.tokenizer_json_path().empty();
}

std::unique_ptr<Tokenizer> load_tokenizer(const ModelFiles& model) {
  if (!has_tokenizer(model)) {
    fail(model.path(), "{}",
         model.gguf() != nullptr ? "no tokenizer in the GGUF (tokenizer.ggml.model)"
                                 : "no tokenizer.json in the model directory");
  }
  if (model.gguf() != nullptr) return Tokenizer::from_gguf(*model.gguf());
  return Tokenizer::from_tokenizer_json(model.tokenizer_json_path());
}

ChatTemplate load_chat_template(const ModelFiles& model) {
  if (!model.chat_template()) fail(model.path(), "the model has no chat template");
  return ChatTemplate(model.chat_template()->text, model.chat_template()->origin);
}

ChatTemplateOptions chat_template_options(const ModelFiles& model, bool add_generation_prompt) {
  ChatTemplateOptions options;
  options.add_generation_prompt = add_generation_prompt;
  for (const auto& [name, text] : model.special_token_strings()) {
    options.special_tokens[name] = text;
  }
  return options;
}

ModelText::ModelText(const ModelFiles& model)
    : model_path_(model.path()),
      tokenizer_(load_tokenizer(model)),
      template_options_(chat_template_options(model, false)),
      vision_(model.config().vision) {
  if (model.chat_template()) chat_template_.emplace(load_chat_template(model));
  strings_as_parts_ = chat_template_ && !renders_string_content();
}

bool ModelText::renders_string_content() const {
  static constexpr std::string_view kProbe = "xlacel-probe-4f1c";
  ChatTemplateOptions options = template_options_;
  options.add_generation_prompt = true;
  auto renders = [&](const Json& content) {
    try {
      return chat_template_
                 ->render(Json::array({Json{{"role", "user"}, {"content", content}}}), options)
                 .find(kProbe) != std::string::npos;
    } catch (const Error&) {
      return false;
    }
  };
  // Only where parts do render: a template that fails on both keeps its strings.
  return renders(kProbe) || !renders(Json::array({Json{{"type", "text"}, {"text", kProbe}}}));
}

std::string ModelText::render_chat(const Json& messages, const Json& extra_context,
                                   bool add_generation_prompt) const {
  if (!chat_template_) fail(model_path_, "the model has no chat template");
  if (!messages.is_array()) fail("messages", "expected a list of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      fail(fmt::format("messages[{}]", i), "needs a string 'role'");
    }
  }
  if (!extra_context.is_null() && !extra_context.is_object()) {
    fail("chat template variables", "expected an object");
  }
  ChatTemplateOptions options = template_options_;
  options.add_generation_prompt = add_generation_prompt;
  if (extra_context.is_object()) options.extra_context = extra_context;
  if (!strings_as_parts_) return chat_template_->render(messages, options);
  Json parts = messages;
  for (Json& message : parts) {
    if (message.contains("content") && message["content"].is_string()) {
      message["content"] = Json::array({Json{{"type", "text"}, {"text", message["content"]}}});
    }
  }
  return chat_template_->render(parts, options);
}

std::vector<int32_t> ModelText::encode_text(std::string_view text) const {
  std::vector<int32_t> ids = tokenizer_->encode(text, true);
  if (ids.empty()) fail("prompt", "the prompt has no tokens");
  return ids;
}

std::string ModelText::with_images(std::string_view text,
                                   std::span<const ImageLayout> images) const {
  if (images.empty()) return std::string(text);
  if (!vision_) fail("images", "the model reads text only: it takes no images");
  return expand_image_placeholders(text, *vision_, images);
}

std::vector<int32_t> ModelText::encode_text_with_images(std::string_view text,
                                                        std::span<const ImageLayout> images) const {
  return encode_text(with_images(text, images));
}

std::vector<int32_t> ModelText::encode_chat(const Json& messages, const Json& extra_context,
                                            std::string* rendered,
                                            std::span<const ImageLayout> images) const {
  std::string text = with_images(render_chat(messages, extra_context, true), images);
  std::vector<int32_t> ids = tokenizer_->encode(text, false);
  if (rendered != nullptr) *rendered = std::move(text);
  if (ids.empty()) fail("messages", "the rendered conversation has no tokens");
  return ids;
}

}  // namespace xlacel::engine
