#include "tokenizer/tokenizer_classes.h"

#include "common/error.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel::tokenizer {

namespace {

// Qwen2Tokenizer's PRETOKENIZE_REGEX: Llama 3's, but \p{N} one digit at a time.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A constructor argument the class takes from tokenizer_config.json, else its default.
template <typename T>
T config_value(const Json& config, const char* key, T fallback) {
  if (!config.is_object() || !config.contains(key) || config.at(key).is_null()) return fallback;
  return config.at(key).get<T>();
}

// The class's BPE(vocab, merges, ...): tokenizer.json's vocabulary and merges, the class's options.
Json bpe_model(const Json& tokenizer_json, const Json& unk_token, bool fuse_unk,
               bool byte_fallback) {
  const Json& model = tokenizer_json.at("model");
  return Json{{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", unk_token},
              {"continuing_subword_prefix", ""},
              {"end_of_word_suffix", ""},
              {"fuse_unk", fuse_unk},
              {"byte_fallback", byte_fallback},
              {"ignore_merges", false},
              {"vocab", model.at("vocab")},
              {"merges", model.at("merges")}};
}

Json byte_level(bool add_prefix_space, bool use_regex) {
  return Json{{"type", "ByteLevel"},
              {"add_prefix_space", add_prefix_space},
              {"trim_offsets", true},
              {"use_regex", use_regex}};
}

Json byte_level_decoder() {
  return Json{{"type", "ByteLevel"},
              {"add_prefix_space", true},
              {"trim_offsets", true},
              {"use_regex", true}};
}

Json nfc() {
  return Json{{"type", "NFC"}};
}

Json sentencepiece_decoder(bool strip_leading_space) {
  Json steps = Json::array(
      {Json{{"type", "Replace"}, {"pattern", Json{{"String", kMetaspace}}}, {"content", " "}},
       Json{{"type", "ByteFallback"}}, Json{{"type", "Fuse"}}});
  if (strip_leading_space) {
    steps.push_back(Json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  return Json{{"type", "Sequence"}, {"decoders", steps}};
}

}  // namespace

Json tokenizer_json_for_class(const std::string& class_name, const Json& tokenizer_json,
                              const Json& tokenizer_config, const std::string& where) {
  if (class_name == "TokenizersBackend") return tokenizer_json;
  if (!tokenizer_json.contains("model") || !tokenizer_json.at("model").is_object() ||
      !tokenizer_json.at("model").contains("vocab") ||
      !tokenizer_json.at("model").contains("merges")) {
    fail(where, "{} rebuilds a BPE model, but tokenizer.json has no BPE vocab and merges",
         class_name);
  }
  try {
    Json out = tokenizer_json;
    const bool add_prefix_space = config_value(tokenizer_config, "add_prefix_space", false);
    if (class_name == "Qwen2Tokenizer") {
      out["model"] = bpe_model(tokenizer_json, nullptr, false, false);
      out["normalizer"] = nfc();
      out["pre_tokenizer"] =
          Json{{"type", "Sequence"},
               {"pretokenizers", Json::array({Json{{"type", "Split"},
                                                   {"pattern", Json{{"Regex", kQwen2Pattern}}},
                                                   {"behavior", "Isolated"},
                                                   {"invert", false}},
                                              byte_level(add_prefix_space, false)})}};
      out["decoder"] = byte_level_decoder();
    } else if (class_name == "GPT2Tokenizer") {
      out["model"] = bpe_model(tokenizer_json, nullptr, false, false);
      out["normalizer"] = nullptr;
      out["pre_tokenizer"] = byte_level(add_prefix_space, true);
      out["decoder"] = byte_level_decoder();
    } else if (class_name == "GPTNeoXTokenizer") {
      out["model"] = bpe_model(tokenizer_json, nullptr, false, false);
      out["normalizer"] = nfc();
      out["pre_tokenizer"] = byte_level(add_prefix_space, true);
      out["decoder"] = byte_level_decoder();
      // Its constructor re-applies add_bos/add_eos_token, which transformers has dropped
      // because a tokenizer.json exists: nothing is added.
      out["post_processor"] = nullptr;
    } else if (class_name == "CohereTokenizer") {
      out["model"] = bpe_model(tokenizer_json, nullptr, false, false);
      out["normalizer"] = nfc();
      out["pre_tokenizer"] =
          Json{{"type", "Sequence"},
               {"pretokenizers", Json::array({Json{{"type", "Digits"}, {"individual_digits", true}},
                                              byte_level(add_prefix_space, true)})}};
      out["decoder"] = byte_level_decoder();
    } else if (class_name == "GemmaTokenizer") {
      out["model"] =
          bpe_model(tokenizer_json,
                    config_value<std::string>(tokenizer_config, "unk_token", "<unk>"), true, true);
      out["normalizer"] =
          Json{{"type", "Replace"}, {"pattern", Json{{"String", " "}}}, {"content", kMetaspace}};
      out["pre_tokenizer"] = Json{{"type", "Split"},
                                  {"pattern", Json{{"String", " "}}},
                                  {"behavior", "MergedWithPrevious"},
                                  {"invert", false}};
      out["decoder"] = sentencepiece_decoder(false);
    } else if (class_name == "LlamaTokenizer") {
      // add_prefix_space defaults to true here; legacy (default false) only picks "first".
      const bool prefix = config_value(tokenizer_config, "add_prefix_space", true);
      const bool legacy = config_value(tokenizer_config, "legacy", false);
      out["model"] = bpe_model(tokenizer_json, nullptr, true, true);
      out["normalizer"] = nullptr;
      out["pre_tokenizer"] = Json{{"type", "Metaspace"},
                                  {"replacement", kMetaspace},
                                  {"prepend_scheme", !prefix  ? "never"
                                                     : legacy ? "always"
                                                              : "first"},
                                  {"split", false}};
      out["decoder"] = sentencepiece_decoder(prefix);
    } else {
      fail(where,
           "transformers loads this tokenizer with its class {}, which xlacel does not mirror "
           "(supported: TokenizersBackend, PreTrainedTokenizerFast, Qwen2Tokenizer, "
           "GPT2Tokenizer, GPTNeoXTokenizer, CohereTokenizer, GemmaTokenizer, LlamaTokenizer)",
           class_name);
    }
    return out;
  } catch (const Json::exception& e) {
    fail(where, "tokenizer_config.json: {}", e.what());
  }
}

}  // namespace xlacel::tokenizer
