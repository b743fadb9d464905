// The tokenizer transformers builds from a GGUF's metadata
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py), expressed as the tokenizer.json it
// amounts to and built by the same loader. This file: the byte-level (gpt2) vocabulary; the
// SentencePiece-style (llama) one is in gguf_sentencepiece_loader.cpp.
#include <fmt/format.h>

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
  // repeated spelling keeps its last index, as a Python dict does.
  Json vocab = Json::object();
  std::vector<std::string> spelled(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    spelled[i] = tokenizer::is_byte_level_spelling(tokens[i])
                     ? tokens[i]
                     : tokenizer::bytes_to_byte_level(tokens[i]);
    vocab[spelled[i]] = i;
  }
  Json merge_list = Json::array();
  for (std::size_t i = 0; i < merges.size(); ++i) {
    auto space = merges[i].find(' ');
    if (space == std::string::npos || merges[i].find(' ', space + 1) != std::string::npos) {
      fail(where, "tokenizer.ggml.merges[{}] '{}' is not two tokens separated by one space", i,
           merges[i]);
    }
    merge_list.push_back(Json::array({merges[i].substr(0, space), merges[i].substr(space + 1)}));
  }

  Json json = Json::object();
  json["model"] = {
      {"type", "BPE"},         {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)},
      {"unk_token", nullptr},  {"fuse_unk", false},         {"byte_fallback", false},
      {"ignore_merges", false}};
  json["pre_tokenizer"] = tokenizer::gguf_split_pre_tokenizer(pre);
  if (json["pre_tokenizer"].is_null()) {
    json["pre_tokenizer"] = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  }
  json["decoder"] = {{"type", "ByteLevel"}};
  json["post_processor"] = nullptr;

  const Json& final_vocab = json["model"]["vocab"];
  json["added_tokens"] = tokenizer::gguf_added_tokens(
      tokens, token_type, /*byte_level=*/true,
      [&final_vocab](const std::string& content) -> std::optional<int32_t> {
        auto it = final_vocab.find(content);
        if (it == final_vocab.end()) return std::nullopt;
        return it->get<int32_t>();
      },
      static_cast<int32_t>(final_vocab.size()));
  tokenizer::TokenizerConfig config =
      tokenizer::gguf_tokenizer_config(gguf, tokens, /*add_bos_default=*/std::nullopt);
  auto parts = tokenizer::build_tokenizer_parts(json, where, config);
  parts->origin = fmt::format("gguf (pre {})", pre.empty() ? "none" : pre);
  return std::make_unique<Tokenizer>(std::move(parts));
}

}  // namespace xlacel
