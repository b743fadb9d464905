// The tokenizer transformers builds from a GGUF's metadata
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py): its BPE model built from the
// vocabulary and merges, the rest expressed as the tokenizer.json it amounts to and built by the
// same loader. This file: the byte-level (gpt2) vocabulary; the
// SentencePiece-style (llama) one is in gguf_sentencepiece_loader.cpp.
#include <fmt/format.h>

#include <unordered_map>

#include "common/error.h"
#include "model_files/gguf_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/gguf_sentencepiece_loader.h"
#include "tokenizer/gguf_tokenizer_metadata.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json_loader.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  const std::string& where = gguf.path();
  std::string model = gguf.get_string("tokenizer.ggml.model");
  if (model == "llama") {
    return std::make_unique<Tokenizer>(tokenizer::sentencepiece_parts_from_gguf(gguf));
  }
  if (model != "gpt2") {
    fail(where,
         "tokenizer.ggml.model '{}' is not supported (only gpt2, byte-level BPE, and llama, "
         "SentencePiece-style BPE)",
         model);
  }
  std::vector<std::string> tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!gguf.has("tokenizer.ggml.merges")) {
    fail(where, "tokenizer.ggml.merges is missing (deriving merges is not supported)");
  }
  std::vector<std::string> merges = gguf.get_string_array("tokenizer.ggml.merges");
  std::vector<int64_t> token_type;
  if (gguf.has("tokenizer.ggml.token_type")) {
    token_type = gguf.get_int_array("tokenizer.ggml.token_type");
  }
  std::string pre = gguf.has("tokenizer.ggml.pre") ? gguf.get_string("tokenizer.ggml.pre") : "";

  // byte_level_tokenizer(): a token outside the byte alphabet is re-spelled through it; a
  // repeated spelling keeps its last index, as a Python dict does. The model is built here from
  // the arrays, not through a tokenizer.json's vocab and merges (a Llama 3 vocabulary's 128k
  // entries and 280k merges as JSON were a visible part of a server's start:
  // docs/PERFORMANCE.md, "GGUF vocabulary").
  std::unordered_map<std::string, int32_t> index;
  index.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string spelled = tokenizer::is_byte_level_spelling(tokens[i])
                              ? tokens[i]
                              : tokenizer::bytes_to_byte_level(tokens[i]);
    index.insert_or_assign(std::move(spelled), static_cast<int32_t>(i));
  }
  std::vector<std::pair<std::string, std::string>> merge_pairs;
  merge_pairs.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    auto space = merges[i].find(' ');
    if (space == std::string::npos || merges[i].find(' ', space + 1) != std::string::npos) {
      fail(where, "tokenizer.ggml.merges[{}] '{}' is not two tokens separated by one space", i,
           merges[i]);
    }
    merge_pairs.emplace_back(merges[i].substr(0, space), merges[i].substr(space + 1));
  }
  tokenizer::BpeModel bpe({index.begin(), index.end()}, merge_pairs, tokenizer::BpeOptions{},
                          where);

  Json json = Json::object();
  json["pre_tokenizer"] = tokenizer::gguf_split_pre_tokenizer(pre);
  if (json["pre_tokenizer"].is_null()) {
    json["pre_tokenizer"] = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  }
  json["decoder"] = {{"type", "ByteLevel"}};
  json["post_processor"] = nullptr;

  json["added_tokens"] =
      tokenizer::gguf_added_tokens(tokens, token_type, /*byte_level=*/true, index);
  tokenizer::TokenizerConfig config =
      tokenizer::gguf_tokenizer_config(gguf, tokens, /*add_bos_default=*/std::nullopt);
  auto parts = tokenizer::build_tokenizer_parts(json, where, config, std::move(bpe));
  parts->origin = fmt::format("gguf (pre {})", pre.empty() ? "none" : pre);
  return std::make_unique<Tokenizer>(std::move(parts));
}

}  // namespace xlacel
