#pragma once
// What the commands share: where the default model lives and opening it.
#include <memory>
#include <string>

#include "engine/model_text.h"
#include "model_files/model_files.h"

namespace xlacel::cli {

// $XLACEL_MODEL, else the model scripts/setup fetched into $XLACEL_CACHE (~/.cache/xlacel).
std::string default_model_path();

// Opens MODEL, or the default model when empty (with a hint to run scripts/setup if absent);
// Error "<path>: unknown architecture ..." for a model of a family xlacel does not run, unless
// only its text side is wanted (`runnable` false: tokenize, chat-template). With `mmproj`, the
// GGUF model with that image encoder file (--mmproj).
ModelFiles open_model(const std::string& path, bool runnable = true,
                      const std::string& mmproj = {});

// The model's text side lives in the engine; the commands that need only one part use these.
using engine::chat_template_options;
using engine::load_chat_template;
using engine::load_tokenizer;

}  // namespace xlacel::cli
