#pragma once
// Builds TokenizerParts from a parsed tokenizer.json (the GGUF loader builds the same JSON).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json_file.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel::tokenizer {

// What transformers takes from tokenizer_config.json (or a GGUF's metadata) on top of the
// tokenizer.json: named special tokens (added as special tokens when missing) and the BOS/EOS
// flags, which, when given, replace the post-processor with transformers' template.
struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::vector<std::string> other_special_tokens;  // unk, pad, ... in transformers' order
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
};

TokenizerConfig read_tokenizer_config(const Json& json, const std::string& where);

// Throws Error naming `where` for malformed or unsupported content. `model`, when given, is used
// instead of json["model"] (a GGUF loader that builds the model itself).
std::unique_ptr<TokenizerParts> build_tokenizer_parts(const Json& json, const std::string& where,
                                                      const TokenizerConfig& config,
                                                      std::optional<BpeModel> model = std::nullopt);

}  // namespace xlacel::tokenizer
