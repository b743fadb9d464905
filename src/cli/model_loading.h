#pragma once
// What the commands share: where the default model lives, and building the tokenizer and
// chat-template inputs from an opened model whichever format it came in.
#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "model_files/model_files.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::cli {

// $XLACEL_MODEL, else the model scripts/setup fetched into $XLACEL_CACHE (~/.cache/xlacel).
std::string default_model_path();

// Opens MODEL, or the default model when empty (with a hint to run scripts/setup if absent);
// Error "<path>: unknown architecture ..." for a model of a family xlacel does not run.
ModelFiles open_model(const std::string& path);

std::unique_ptr<Tokenizer> load_tokenizer(const ModelFiles& model);

// The model's template; an Error naming the model when it has none.
ChatTemplate load_chat_template(const ModelFiles& model);
ChatTemplateOptions chat_template_options(const ModelFiles& model, bool add_generation_prompt);

}  // namespace xlacel::cli
