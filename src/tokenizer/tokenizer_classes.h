#pragma once
// What the transformers tokenizer classes xlacel mirrors set in their constructors: each keeps
// tokenizer.json's vocabulary, merges, added tokens and post-processor but installs its own
// normalizer, pre-tokenizer, decoder and BPE options (Qwen2Tokenizer: NFC and a regex that
// splits digits one by one; GPT2Tokenizer; GPTNeoXTokenizer; CohereTokenizer; GemmaTokenizer;
// LlamaTokenizer). TokenizersBackend keeps tokenizer.json as written.
#include <string>

#include "common/json_file.h"

namespace xlacel::tokenizer {

// tokenizer.json as `class_name` (auto_tokenizer_class) rebuilds it; `tokenizer_config`: the
// tokenizer_config.json object (its add_prefix_space, legacy and unk_token reach the
// constructor), or null. Error naming `where` for a class xlacel does not mirror.
Json tokenizer_json_for_class(const std::string& class_name, const Json& tokenizer_json,
                              const Json& tokenizer_config, const std::string& where);

}  // namespace xlacel::tokenizer
