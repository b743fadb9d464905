#pragma once
// A model's text side, loaded once: its tokenizer and (when it has one) its chat template,
// parsed once. Turns what users send (raw text, or chat messages) into prompt ids exactly as
// transformers does.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "common/json_file.h"
#include "engine/image_prompt.h"
#include "model_files/model_files.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::engine {

// Whether the model comes with a tokenizer (a GGUF's vocabulary, or tokenizer.json).
bool has_tokenizer(const ModelFiles& model);
std::unique_ptr<Tokenizer> load_tokenizer(const ModelFiles& model);
// The model's template; Error naming the model when it has none.
ChatTemplate load_chat_template(const ModelFiles& model);
ChatTemplateOptions chat_template_options(const ModelFiles& model, bool add_generation_prompt);

class ModelText {
 public:
  explicit ModelText(const ModelFiles& model);

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  bool has_chat_template() const { return chat_template_.has_value(); }
  // The template's text ("" without one): what it renders tells the model's tool-call syntax.
  std::string_view chat_template_source() const {
    return chat_template_ ? std::string_view(chat_template_->source()) : std::string_view();
  }

  // `messages`: a list of {"role": string, ...} objects; `extra_context`: further template
  // variables (an object, may be empty). Error naming the field when malformed, or the model
  // when it has no template. A message's string content reaches a template that renders only
  // content parts (SmolVLM's) as one text part, as transformers' processors pass it.
  std::string render_chat(const Json& messages, const Json& extra_context,
                          bool add_generation_prompt) const;

  // Raw text with the model's special tokens added (BOS, ...). Error when it has no tokens.
  std::vector<int32_t> encode_text(std::string_view text) const;
  // The conversation rendered with the assistant's turn opened, tokenized as transformers'
  // apply_chat_template does: without adding special tokens again. `rendered`, when given,
  // receives the text. With `images` (a vision-language model's, in order), each image
  // placeholder the template wrote is replaced as its processor does (image_prompt.h) first.
  std::vector<int32_t> encode_chat(const Json& messages, const Json& extra_context,
                                   std::string* rendered = nullptr,
                                   std::span<const ImageLayout> images = {}) const;
  // Raw text with its image placeholders expanded for `images` (as encode_chat), then encoded as
  // encode_text does.
  std::vector<int32_t> encode_text_with_images(std::string_view text,
                                               std::span<const ImageLayout> images) const;

 private:
  std::string model_path_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<ChatTemplate> chat_template_;
  ChatTemplateOptions template_options_;  // special tokens; per call: generation prompt, extras
  std::optional<VisionConfig> vision_;    // a vision-language model's: its image placeholders
  // The template reads a message's content only as parts ({"type": "text", "text"}), rendering a
  // string as nothing (SmolVLM's): render_chat gives it each string as one text part.
  bool strings_as_parts_ = false;
  // Whether the template renders a user message's string content (probed once).
  bool renders_string_content() const;
  // `text` with its image placeholders expanded (unchanged without images); Error naming
  // `images` when the model takes none.
  std::string with_images(std::string_view text, std::span<const ImageLayout> images) const;
};

}  // namespace xlacel::engine
