#include "tokenizer/gguf_sentencepiece_loader.h"

#include <fmt/format.h>

#include <map>
#include <unordered_map>

#include "common/error.h"
#include "common/utf8.h"
#include "model_files/gguf_file.h"
#include "tokenizer/gguf_tokenizer_metadata.h"
#include "tokenizer/merges_from_vocabulary.h"
#include "tokenizer/tokenizer_json_loader.h"

namespace xlacel::tokenizer {

namespace {

// How one tokenizer class shapes the SentencePiece vocabulary
// (gguf_tokenizer_mapping.py: GGUF_SENTENCEPIECE_BUILDERS, else sentencepiece_tokenizer with
// LlamaTokenizer).
struct SentencePieceFlavor {
  const char* tokenizer_class;
  // gemma_tokenizer(): tokens of only whitespace holding a space are re-spelled as that many
  // `▁`, and merges are ordered by the file's token order instead of by the scores.
  bool gemma_vocabulary;
  Json normalizer;
  Json pre_tokenizer;
  bool strip_leading_space;  // the decoder's Strip(' ', 1, 0): LlamaTokenizer's add_prefix_space
  // GemmaTokenizer gives its BPE the unk token "<unk>"; LlamaTokenizer gives it none.
  bool unk_in_model;
  // The class's default special tokens (unk, bos, eos, ...) the GGUF does not override:
  // registered like the named ones (a no-op when the vocabulary has them).
  std::vector<std::string> default_special_tokens;
};

Json replace_spaces_normalizer() {
  return {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMetaspace}};
}

const SentencePieceFlavor& flavor_for(const std::string& architecture) {
  static const SentencePieceFlavor gemma{
      "GemmaTokenizer",
      true,
      replace_spaces_normalizer(),
      // A no-op after the normalizer (no spaces are left), kept because the class has it.
      {{"type", "Split"},
       {"pattern", {{"String", " "}}},
       {"behavior", "MergedWithPrevious"},
       {"invert", false}},
      false,
      true,
      {"<mask>"}};
  static const SentencePieceFlavor phi3{
      "phi3 (LlamaTokenizer, prefix space from a normalizer)",
      false,
      {{"type", "Sequence"},
       {"normalizers", Json::array({{{"type", "Prepend"}, {"prepend", kMetaspace}},
                                    replace_spaces_normalizer()})}},
      Json(),
      true,
      false,
      {}};
  static const SentencePieceFlavor llama{"LlamaTokenizer",
                                         false,
                                         Json(),
                                         {{"type", "Metaspace"},
                                          {"replacement", kMetaspace},
                                          {"prepend_scheme", "first"},
                                          {"split", false}},
                                         true,
                                         false,
                                         {}};
  static const std::map<std::string, const SentencePieceFlavor*> by_architecture = {
      {"gemma", &gemma}, {"gemma2", &gemma}, {"gemma3", &gemma}, {"phi3", &phi3}};
  auto it = by_architecture.find(architecture);
  return it == by_architecture.end() ? llama : *it->second;
}

// Python's str.isspace() for one code point (what `not t.strip()` tests).
bool python_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// gemma_tokenizer()'s re-spelling: "  " -> "▁▁" (one `▁` per character of the token).
std::string gemma_spelling(const std::string& token) {
  if (token.find(' ') == std::string::npos) return token;
  std::string spelled;
  std::size_t pos = 0;
  while (pos < token.size()) {
    auto c = utf8::decode(token, pos);
    if (!c || !python_isspace(*c)) return token;
    spelled += kMetaspace;
  }
  return spelled;
}

}  // namespace

std::unique_ptr<TokenizerParts> sentencepiece_parts_from_gguf(const GgufFile& gguf) {
  const std::string& where = gguf.path();
  auto require = [&](const char* key) {
    if (!gguf.has(key)) fail(where, "{} is missing (a llama tokenizer needs it)", key);
  };
  require("tokenizer.ggml.tokens");
  std::vector<std::string> tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty()) fail(where, "tokenizer.ggml.tokens is empty");
  std::string architecture =
      gguf.has("general.architecture") ? gguf.get_string("general.architecture") : "";
  const SentencePieceFlavor& flavor = flavor_for(architecture);

  // The merge order: the file's order for Gemma, else the scores (generate_merges).
  std::vector<double> scores;
  if (flavor.gemma_vocabulary) {
    for (auto& token : tokens) token = gemma_spelling(token);
    scores.resize(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) scores[i] = -static_cast<double>(i);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  if (gguf.has("tokenizer.ggml.merges")) {
    // get_merges(): merges the file gives win over derived ones.
    std::vector<std::string> listed = gguf.get_string_array("tokenizer.ggml.merges");
    for (std::size_t i = 0; i < listed.size(); ++i) {
      auto space = listed[i].find(' ');
      if (space == std::string::npos || listed[i].find(' ', space + 1) != std::string::npos) {
        fail(where, "tokenizer.ggml.merges[{}] '{}' is not two tokens separated by one space", i,
             listed[i]);
      }
      merges.emplace_back(listed[i].substr(0, space), listed[i].substr(space + 1));
    }
  } else {
    if (!flavor.gemma_vocabulary) {
      require("tokenizer.ggml.scores");
      scores = gguf.get_float_array("tokenizer.ggml.scores");
      if (scores.size() != tokens.size()) {
        fail(where, "tokenizer.ggml.scores has {} entries for {} tokens", scores.size(),
             tokens.size());
      }
    }
    merges = merges_from_vocabulary(tokens, scores);
  }
  require("tokenizer.ggml.token_type");
  std::vector<int64_t> token_type = gguf_token_types(gguf, tokens.size());
  // The original spellings: add_gguf_special_tokens() reads the file's tokens, not Gemma's.
  std::vector<std::string> original = gguf.get_string_array("tokenizer.ggml.tokens");

  // {token: index} keeps a repeated token's last index.
  std::unordered_map<std::string, int32_t> index;
  index.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) index[tokens[i]] = static_cast<int32_t>(i);
  std::vector<std::pair<std::string, int32_t>> vocab(index.begin(), index.end());

  BpeOptions options;
  // The class's default, not the GGUF's unk name (the builder passes only vocab and merges).
  if (flavor.unk_in_model && index.contains("<unk>")) options.unk_token = "<unk>";
  options.fuse_unk = true;
  options.byte_fallback = true;
  BpeModel model(std::move(vocab), merges, std::move(options), where);

  Json json = Json::object();
  json["normalizer"] = flavor.normalizer;
  json["pre_tokenizer"] = flavor.pre_tokenizer;
  std::string pre = gguf.has("tokenizer.ggml.pre") ? gguf.get_string("tokenizer.ggml.pre") : "";
  if (Json split = gguf_split_pre_tokenizer(pre); !split.is_null()) {
    json["pre_tokenizer"] = std::move(split);  // set_split_regex() applies to every type
  }
  Json decoders =
      Json::array({{{"type", "Replace"}, {"pattern", {{"String", kMetaspace}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}}});
  if (flavor.strip_leading_space) {
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  json["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
  json["post_processor"] = nullptr;
  json["added_tokens"] = gguf_added_tokens(original, token_type, /*byte_level=*/false, index);

  // get_gguf_tokenizer(): llama.cpp adds BOS to a SentencePiece vocabulary unless told not to.
  TokenizerConfig config = gguf_tokenizer_config(gguf, original, /*add_bos_default=*/true);
  for (const std::string& name : flavor.default_special_tokens) {
    config.other_special_tokens.push_back(name);
  }
  auto parts = build_tokenizer_parts(json, where, config, std::move(model));
  parts->origin =
      fmt::format("gguf llama ({}, pre {})", flavor.tokenizer_class, pre.empty() ? "none" : pre);
  return parts;
}

}  // namespace xlacel::tokenizer
