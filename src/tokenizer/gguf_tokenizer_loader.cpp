// The tokenizer transformers builds from a GGUF's metadata
// (transformers/integrations/gguf/gguf_tokenizer_mapping.py), expressed as the tokenizer.json it
// amounts to and built by the same loader.
#include <fmt/format.h>

#include <map>
#include <set>

#include "common/error.h"
#include "model_files/gguf_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json_loader.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel {

namespace {

constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekkenSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4oSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Split = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                                    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N})"
    R"(| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GGUF_PRE_TOKENIZER_SPLITS: `tokenizer.ggml.pre` values that get a Split pre-tokenizer.
const char* split_for(const std::string& pre) {
  static const std::map<std::string, const char*> splits = {
      {"llama3", kLlama3Split},       {"llama-v3", kLlama3Split},
      {"llama-bpe", kLlama3Split},    {"falcon3", kLlama3Split},
      {"falcon-h1", kLlama3Split},    {"pixtral", kLlama3Split},
      {"midm-2.0", kLlama3Split},     {"lfm2", kLlama3Split},
      {"jina-v5-nano", kLlama3Split}, {"dbrx", kLlama3Split},
      {"smaug-bpe", kLlama3Split},    {"tekken", kTekkenSplit},
      {"qwen2", kQwen2Split},         {"deepseek-r1-qwen", kQwen2Split},
      {"kormo", kQwen2Split},         {"f2llmv2", kQwen2Split},
      {"megrez", kQwen2Split},        {"qwen35", kQwen35Split},
      {"gpt-4o", kGpt4oSplit},        {"llama4", kGpt4oSplit},
      {"kanana2", kGpt4oSplit},       {"talkie", kGpt4oSplit},
      {"minimax-m2", kGpt4oSplit},
  };
  auto it = splits.find(pre);
  return it == splits.end() ? nullptr : it->second;
}

constexpr int64_t kControl = 3;
constexpr int64_t kUserDefined = 4;

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  const std::string& where = gguf.path();
  std::string model = gguf.get_string("tokenizer.ggml.model");
  if (model != "gpt2") {
    fail(where, "tokenizer.ggml.model '{}' is not supported (only gpt2, byte-level BPE)", model);
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
  if (const char* split = split_for(pre)) {
    json["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array(
             {{{"type", "Split"},
               {"pattern", {{"Regex", split}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  } else {
    json["pre_tokenizer"] = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  }
  json["decoder"] = {{"type", "ByteLevel"}};
  json["post_processor"] = nullptr;

  // add_gguf_special_tokens(): CONTROL tokens spelled in the byte alphabet become special
  // tokens, then USER_DEFINED tokens found in the vocabulary become plain added tokens.
  Json added = Json::array();
  std::set<std::string> seen;
  auto add = [&](std::size_t index, bool special) {
    const std::string& content = tokens[index];
    if (!seen.insert(content).second) return;
    added.push_back({{"id", json["model"]["vocab"][content].get<int64_t>()},
                     {"content", content},
                     {"special", special},
                     {"normalized", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"single_word", false}});
  };
  const Json& final_vocab = json["model"]["vocab"];
  for (std::size_t i = 0; i < token_type.size() && i < tokens.size(); ++i) {
    if (token_type[i] == kControl && tokenizer::is_byte_level_spelling(tokens[i])) add(i, true);
  }
  for (std::size_t i = 0; i < token_type.size() && i < tokens.size(); ++i) {
    if (token_type[i] == kUserDefined && final_vocab.contains(tokens[i])) add(i, false);
  }
  json["added_tokens"] = std::move(added);

  // get_gguf_tokenizer(): bos/eos/unk/pad by id, and the add_bos / add_eos flags.
  tokenizer::TokenizerConfig config;
  auto token_for = [&](const char* key) -> std::optional<std::string> {
    if (!gguf.has(key)) return std::nullopt;
    uint64_t id = gguf.get_uint(key);
    if (id >= tokens.size()) {
      fail(where, "{} {} is out of range for {} tokens", key, id, tokens.size());
    }
    return tokens[id];
  };
  config.bos_token = token_for("tokenizer.ggml.bos_token_id");
  config.eos_token = token_for("tokenizer.ggml.eos_token_id");
  for (const char* key : {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
    if (auto name = token_for(key)) config.other_special_tokens.push_back(*name);
  }
  if (gguf.has("tokenizer.ggml.add_bos_token")) {
    config.add_bos_token = gguf.get_bool("tokenizer.ggml.add_bos_token");
  }
  if (gguf.has("tokenizer.ggml.add_eos_token")) {
    config.add_eos_token = gguf.get_bool("tokenizer.ggml.add_eos_token");
  }
  auto parts = tokenizer::build_tokenizer_parts(json, where, config);
  parts->origin = fmt::format("gguf (pre {})", pre.empty() ? "none" : pre);
  return std::make_unique<Tokenizer>(std::move(parts));
}

}  // namespace xlacel
