#pragma once
// Turning what the user typed into prompt token ids, shared by `generate` and `chat-template`:
// raw text (-p), one chat turn (--chat), or a messages file (--messages) rendered through the
// model's chat template.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_text.h"
#include "model_files/model_files.h"

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
  // --image: image files, before the text of -p (where the text has no image placeholder of its
  // own) or of --chat's message, as chat templates place image parts.
  std::vector<std::string> images;
};

// Exactly one of the three must be set (Error otherwise). Images are not taken (prompt()).
std::vector<int32_t> prompt_ids(const engine::ModelText& text, const PromptInput& input);

// A prompt with its images: the ids, each image placeholder expanded as the model's processor
// expands it, and the images' pixel values (null without images).
struct Prompt {
  std::vector<int32_t> ids;
  std::shared_ptr<const std::vector<float>> image_pixels;
};

// As prompt_ids, with the images of --image and of the messages file's image parts (local paths
// or data: URLs), prepared by `model`'s image processor. Error naming --image for images a
// text-only model is given, or a file that is not an image.
Prompt prompt(const engine::ModelText& text, const ModelFiles& model, const PromptInput& input);

}  // namespace xlacel::cli
