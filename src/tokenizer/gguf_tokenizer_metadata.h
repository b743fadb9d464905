#pragma once
// What transformers reads from a GGUF's tokenizer metadata for every vocabulary type
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py): the split regex picked by
// `tokenizer.ggml.pre`, the control / user-defined tokens it adds, and the tokenizer config
// (special token names, add_bos / add_eos).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/json_file.h"
#include "tokenizer/tokenizer_json_loader.h"

namespace xlacel {
class GgufFile;
}

namespace xlacel::tokenizer {

// set_split_regex(): the Split + ByteLevel pre-tokenizer for a `tokenizer.ggml.pre` value in
// GGUF_PRE_TOKENIZER_SPLITS, or null when the value is not there.
Json gguf_split_pre_tokenizer(const std::string& pre);

// add_gguf_special_tokens(): CONTROL tokens (type 3) become special tokens (for a byte-level
// vocabulary only those spelled in the byte alphabet), then USER_DEFINED tokens (type 4) that
// `vocabulary` (the model's tokens as spelled there, by id) knows become plain added tokens; as
// tokenizer.json "added_tokens" entries, ids from `vocabulary` (one it lacks gets the next id
// after the vocabulary's tokens and the tokens added so far).
Json gguf_added_tokens(const std::vector<std::string>& tokens,
                       const std::vector<int64_t>& token_type, bool byte_level,
                       const std::unordered_map<std::string, int32_t>& vocabulary);

// get_gguf_tokenizer(): bos/eos/unk/pad names by id and the add_bos / add_eos flags;
// `add_bos_default` when the file has no tokenizer.ggml.add_bos_token.
TokenizerConfig gguf_tokenizer_config(const GgufFile& gguf, const std::vector<std::string>& tokens,
                                      std::optional<bool> add_bos_default);

// tokenizer.ggml.token_type, empty when absent; Error naming the key when its length differs
// from the token count.
std::vector<int64_t> gguf_token_types(const GgufFile& gguf, std::size_t token_count);

}  // namespace xlacel::tokenizer
