#pragma once
// A model's chat template, rendered as transformers' apply_chat_template renders it with jinja2
// (trim_blocks, lstrip_blocks, loop controls, its tojson/raise_exception/strftime_now).
//
// Dicts keep the key order of the Json they come from; xlacel::Json (nlohmann::json) orders
// object keys alphabetically, so `tojson` of a tool schema or `items()` of a message lists keys
// sorted. Anything the engine does not support fails with an xlacel::Error naming the construct
// and the template line; it never renders something different from jinja2 silently.
#include <memory>
#include <string>

#include "common/json_file.h"

namespace xlacel {

namespace jinja {
struct Template;
}

struct ChatTemplateOptions {
  bool add_generation_prompt = false;
  // e.g. {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}: top-level variables
  Json special_tokens = Json::object();
  // other variables (tools, documents, custom kwargs); they override special_tokens
  Json extra_context = Json::object();
};

class ChatTemplate {
 public:
  // Parses once; `where` names the template's origin in errors. Throws Error on syntax errors.
  ChatTemplate(std::string source, std::string where);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // `messages` is a JSON array of message objects. Throws Error (raise_exception, undefined
  // operations, unsupported constructs, limits exceeded) naming `where` and the line.
  std::string render(const Json& messages, const ChatTemplateOptions& options) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string where_;
  std::unique_ptr<jinja::Template> template_;
};

}  // namespace xlacel
