#pragma once
// Turning what the user typed into prompt token ids, shared by `generate` and `chat-template`:
// raw text (-p), one chat turn (--chat), or a messages file (--messages) rendered through the
// model's chat template.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model_text.h"

namespace xlacel::cli {

// A messages file holds a list of {role, content} messages, or an object with "messages" and
// extra template variables. Renders it with the model's template; Error naming the file when it
// is malformed.
std::string render_messages_file(const engine::ModelText& text, const std::string& path,
                                 bool add_generation_prompt);

struct PromptInput {
  std::string text;           // -p: raw text, tokenized with the model's special tokens added
  std::string chat;           // --chat: one user message through the chat template
  std::string messages_path;  // --messages: a messages file through the chat template
};

// Exactly one of the three must be set (Error otherwise).
std::vector<int32_t> prompt_ids(const engine::ModelText& text, const PromptInput& input);

}  // namespace xlacel::cli
