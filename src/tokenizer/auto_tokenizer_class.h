#pragma once
// The tokenizer class transformers' AutoTokenizer (v5) instantiates for an HF model directory.
// A model-specific class (Qwen2Tokenizer for qwen2/qwen3, GemmaTokenizer, ...) rebuilds its
// normalizer, pre-tokenizer, decoder and BPE options in its constructor, replacing those of
// tokenizer.json (tokenizer_classes.h), so the class decides the ids.
#include <optional>
#include <string>

#include "common/json_file.h"

namespace xlacel::tokenizer {

struct AutoTokenizerInputs {
  std::string model_type;                     // config.json's; empty without one
  std::optional<std::string> declared_class;  // tokenizer_config.json's tokenizer_class, else
                                              // config.json's
  bool remote_code = false;                   // tokenizer_config.json's auto_map names one
  bool tokenizer_json_is_byte_level = false;  // tokenizer.json mentions "ByteLevel"
};

// What AutoTokenizer reads from the directory: config.json and tokenizer_config.json (either may
// be null when absent) and the tokenizer.json text.
AutoTokenizerInputs auto_tokenizer_inputs(const Json& config, const Json& tokenizer_config,
                                          const Json& tokenizer_json);

// The class name without "Fast" (transformers 5 aliases XFast to X); "TokenizersBackend" for
// tokenizer.json as written. Model types outside the table of the families xlacel runs (and
// their relatives) count as types transformers registers no class for. Remote code cannot be
// mirrored: such a directory loads tokenizer.json as written.
std::string auto_tokenizer_class(const AutoTokenizerInputs& inputs);

}  // namespace xlacel::tokenizer
