#include "tokenizer/auto_tokenizer_class.h"

#include <map>
#include <set>
#include <string_view>

namespace xlacel::tokenizer {

namespace {

constexpr std::string_view kBackend = "TokenizersBackend";

// transformers' TOKENIZER_MAPPING_NAMES for the model types xlacel runs and their relatives (a
// type absent here, such as llama, is one transformers registers no class for).
const std::map<std::string, std::string, std::less<>>& registered_classes() {
  static const std::map<std::string, std::string, std::less<>> classes = {
      {"cohere", "CohereTokenizer"},    {"cohere2", "CohereTokenizer"},
      {"gemma", "GemmaTokenizer"},      {"gemma2", "GemmaTokenizer"},
      {"gemma3", "GemmaTokenizer"},     {"gemma3_text", "GemmaTokenizer"},
      {"gpt2", "GPT2Tokenizer"},        {"gpt_neox", "GPTNeoXTokenizer"},
      {"granite", "TokenizersBackend"}, {"granitemoe", "TokenizersBackend"},
      {"mistral", "TokenizersBackend"}, {"mixtral", "TokenizersBackend"},
      {"olmo", "GPTNeoXTokenizer"},     {"olmo2", "TokenizersBackend"},
      {"olmo3", "TokenizersBackend"},   {"olmoe", "GPTNeoXTokenizer"},
      {"phi", "GPT2Tokenizer"},         {"phi3", "TokenizersBackend"},
      {"phimoe", "TokenizersBackend"},  {"qwen2", "Qwen2Tokenizer"},
      {"qwen2_moe", "Qwen2Tokenizer"},  {"qwen3", "Qwen2Tokenizer"},
      {"qwen3_moe", "Qwen2Tokenizer"},  {"stablelm", "TokenizersBackend"},
      {"starcoder2", "GPT2Tokenizer"},
  };
  return classes;
}

// MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS: types whose declared class transformers overrides.
bool hub_class_is_known_wrong(std::string_view model_type) {
  static const std::set<std::string, std::less<>> types = {"phi3", "phimoe", "qwen2"};
  return types.contains(model_type);
}

std::string without_fast(std::string_view name) {
  if (name.ends_with("Fast")) name.remove_suffix(4);
  return std::string(name);
}

// tokenizer_class_from_name, then the generic classes folded into the backend.
std::string canonical(std::string_view name) {
  std::string bare = without_fast(name);
  if (bare == "PreTrainedTokenizer" || bare == "PythonBackend") return std::string(kBackend);
  return bare;
}

bool is_generic(std::string_view bare) {
  return bare == kBackend || bare == "PythonBackend" || bare == "PreTrainedTokenizer" ||
         bare == "MistralCommonBackend";
}

std::optional<std::string> string_field(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_string()) {
    return std::nullopt;
  }
  return object.at(key).get<std::string>();
}

}  // namespace

AutoTokenizerInputs auto_tokenizer_inputs(const Json& config, const Json& tokenizer_config,
                                          const Json& tokenizer_json) {
  AutoTokenizerInputs inputs;
  inputs.model_type = string_field(config, "model_type").value_or("");
  inputs.declared_class = string_field(tokenizer_config, "tokenizer_class");
  if (!inputs.declared_class) inputs.declared_class = string_field(config, "tokenizer_class");
  if (tokenizer_config.is_object() && tokenizer_config.contains("auto_map")) {
    const Json& auto_map = tokenizer_config.at("auto_map");
    inputs.remote_code =
        auto_map.is_array() || (auto_map.is_object() && auto_map.contains("AutoTokenizer") &&
                                !auto_map.at("AutoTokenizer").is_null());
  }
  // transformers looks for the text "ByteLevel" (with its quotes) in the file.
  inputs.tokenizer_json_is_byte_level =
      tokenizer_json.dump().find("\"ByteLevel\"") != std::string::npos;
  return inputs;
}

std::string auto_tokenizer_class(const AutoTokenizerInputs& inputs) {
  if (inputs.remote_code) return std::string(kBackend);
  const auto& table = registered_classes();
  auto found = table.find(inputs.model_type);
  const std::optional<std::string> registered =
      found == table.end() ? std::nullopt : std::optional<std::string>(found->second);
  if (!inputs.declared_class) return registered.value_or(std::string(kBackend));
  const std::string declared = without_fast(*inputs.declared_class);
  // LlamaTokenizer hard-codes Metaspace; a byte-level tokenizer.json declaring it loads as is.
  if (declared == "LlamaTokenizer" && !hub_class_is_known_wrong(inputs.model_type) &&
      inputs.tokenizer_json_is_byte_level) {
    return std::string(kBackend);
  }
  if (registered && *registered != declared) {
    // The declared class wins unless the type's own class is a specific one and the declared
    // class is known to be wrong for it; a generic class always means tokenizer.json as is.
    if (!is_generic(*registered)) {
      std::string chosen =
          canonical(hub_class_is_known_wrong(inputs.model_type) ? *registered : declared);
      if (!is_generic(chosen)) return chosen;
    }
    return std::string(kBackend);
  }
  return canonical(declared);
}

}  // namespace xlacel::tokenizer
