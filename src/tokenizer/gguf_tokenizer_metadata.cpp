#include "tokenizer/gguf_tokenizer_metadata.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "model_files/gguf_file.h"
#include "tokenizer/byte_level.h"

namespace xlacel::tokenizer {

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

Json gguf_split_pre_tokenizer(const std::string& pre) {
  const char* split = split_for(pre);
  if (split == nullptr) return Json();
  return {
      {"type", "Sequence"},
      {"pretokenizers",
       Json::array({{{"type", "Split"},
                     {"pattern", {{"Regex", split}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
}

Json gguf_added_tokens(const std::vector<std::string>& tokens,
                       const std::vector<int64_t>& token_type, bool byte_level,
                       const std::unordered_map<std::string, int32_t>& vocabulary) {
  auto id_of = [&vocabulary](const std::string& content) -> std::optional<int32_t> {
    auto it = vocabulary.find(content);
    if (it == vocabulary.end()) return std::nullopt;
    return it->second;
  };
  Json added = Json::array();
  std::set<std::string> seen;
  auto next_free = static_cast<int32_t>(vocabulary.size());
  auto add = [&](const std::string& content, int32_t id, bool special) {
    if (!seen.insert(content).second) return;
    next_free = std::max(next_free, id + 1);
    added.push_back({{"id", id},
                     {"content", content},
                     {"special", special},
                     {"normalized", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"single_word", false}});
  };
  for (std::size_t i = 0; i < token_type.size() && i < tokens.size(); ++i) {
    if (token_type[i] != kControl) continue;
    if (byte_level && !is_byte_level_spelling(tokens[i])) continue;
    // A control token the vocabulary spells differently (a re-spelled one) is added anew,
    // after the vocabulary, as transformers' add_special_tokens does.
    add(tokens[i], id_of(tokens[i]).value_or(next_free), true);
  }
  for (std::size_t i = 0; i < token_type.size() && i < tokens.size(); ++i) {
    if (token_type[i] != kUserDefined) continue;
    if (auto id = id_of(tokens[i])) add(tokens[i], *id, false);
  }
  return added;
}

TokenizerConfig gguf_tokenizer_config(const GgufFile& gguf, const std::vector<std::string>& tokens,
                                      std::optional<bool> add_bos_default) {
  const std::string& where = gguf.path();
  TokenizerConfig config;
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
  config.add_bos_token = add_bos_default;
  if (gguf.has("tokenizer.ggml.add_bos_token")) {
    config.add_bos_token = gguf.get_bool("tokenizer.ggml.add_bos_token");
  }
  if (gguf.has("tokenizer.ggml.add_eos_token")) {
    config.add_eos_token = gguf.get_bool("tokenizer.ggml.add_eos_token");
  }
  return config;
}

std::vector<int64_t> gguf_token_types(const GgufFile& gguf, std::size_t token_count) {
  if (!gguf.has("tokenizer.ggml.token_type")) return {};
  std::vector<int64_t> types = gguf.get_int_array("tokenizer.ggml.token_type");
  if (types.size() != token_count) {
    fail(gguf.path(), "tokenizer.ggml.token_type has {} entries for {} tokens", types.size(),
         token_count);
  }
  return types;
}

}  // namespace xlacel::tokenizer
