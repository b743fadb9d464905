#include "tokenizer/tokenizer_json_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.h"
#include "common/utf8.h"
#include "tokenizer/byte_level.h"

namespace xlacel::tokenizer {

namespace {

// Typed access to one JSON object, with errors naming the file and the place in it.
class Fields {
 public:
  Fields(const Json& json, const std::string& where, std::string context)
      : json_(json), where_(where), context_(std::move(context)) {
    if (!json_.is_object())
      fail(where_, "{} must be an object, found {}", context_, json_.type_name());
  }

  bool has(const char* key) const { return json_.contains(key) && !json_.at(key).is_null(); }
  const Json& at(const char* key) const {
    if (!json_.contains(key)) fail(where_, "{} has no '{}'", context_, key);
    return json_.at(key);
  }
  std::string string(const char* key) const {
    const Json& value = at(key);
    if (!value.is_string()) wrong(key, "a string", value);
    return value.get<std::string>();
  }
  std::optional<std::string> optional_string(const char* key) const {
    if (!has(key)) return std::nullopt;
    return string(key);
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const Json& value = json_.at(key);
    if (!value.is_boolean()) wrong(key, "a boolean", value);
    return value.get<bool>();
  }
  const Json& array(const char* key) const {
    const Json& value = at(key);
    if (!value.is_array()) wrong(key, "an array", value);
    return value;
  }
  const Json& object(const char* key) const {
    const Json& value = at(key);
    if (!value.is_object()) wrong(key, "an object", value);
    return value;
  }
  std::string sub(const char* key) const { return fmt::format("{}.{}", context_, key); }
  const std::string& where() const { return where_; }
  const std::string& context() const { return context_; }

  [[noreturn]] void wrong(const char* key, const char* expected, const Json& value) const {
    fail(where_, "{}.{} must be {}, found {}", context_, key, expected, value.type_name());
  }

 private:
  const Json& json_;
  const std::string& where_;
  std::string context_;
};

int32_t to_id(const Json& value, const std::string& where, const std::string& context) {
  if (!value.is_number_integer()) {
    fail(where, "{} must be an integer id, found {}", context, value.type_name());
  }
  auto id = value.get<int64_t>();
  if (id < 0 || id >= (int64_t{1} << 24)) fail(where, "{} id {} is out of range", context, id);
  return static_cast<int32_t>(id);
}

void require_utf8(const std::string& text, const std::string& where, const std::string& context) {
  if (!utf8::is_valid(text)) fail(where, "{} is not valid UTF-8", context);
}

SplitBehavior parse_behavior(const std::string& name, const Fields& fields) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  fail(fields.where(), "{}.behavior '{}' is not a split behavior", fields.context(), name);
}

void parse_pre_tokenizer(const Json& json, const std::string& where, const std::string& context,
                         PreTokenizer& out) {
  if (json.is_null()) return;
  Fields fields(json, where, context);
  std::string type = fields.string("type");
  if (type == "Sequence") {
    const Json& steps = fields.array("pretokenizers");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      parse_pre_tokenizer(steps[i], where, fmt::format("{}.pretokenizers[{}]", context, i), out);
    }
  } else if (type == "ByteLevel") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = fields.boolean("add_prefix_space", true);
    step.use_regex = fields.boolean("use_regex", true);
    if (step.use_regex) {
      static const auto gpt2 = std::make_shared<const Regex>(kGpt2Pattern, "tokenizer");
      step.regex = gpt2;
    }
    step.description = fmt::format("ByteLevel(add_prefix_space={}, use_regex={})",
                                   step.add_prefix_space, step.use_regex);
    out.add(std::move(step));
  } else if (type == "Split") {
    PreTokenizerStep step;
    Fields pattern(fields.object("pattern"), where, fields.sub("pattern"));
    std::string source;
    std::string shown;
    if (pattern.has("Regex")) {
      source = pattern.string("Regex");
      shown = "regex";
    } else if (pattern.has("String")) {
      source = Regex::escape(pattern.string("String"));
      shown = "string";
    } else {
      fail(where, "{}.pattern must hold 'Regex' or 'String'", context);
    }
    require_utf8(source, where, fields.sub("pattern"));
    step.regex = std::make_shared<const Regex>(source, fmt::format("{}: {}", where, context));
    step.behavior = parse_behavior(fields.string("behavior"), fields);
    step.invert = fields.boolean("invert", false);
    step.description = fmt::format("Split({}, {}{})", shown, fields.string("behavior"),
                                   step.invert ? ", invert" : "");
    out.add(std::move(step));
  } else if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = fields.string("replacement");
    std::size_t end = 0;
    if (!utf8::decode(step.replacement, end) || end != step.replacement.size()) {
      fail(where, "{}.replacement must be one character", context);
    }
    std::string scheme = fields.has("prepend_scheme") ? fields.string("prepend_scheme") : "always";
    if (scheme == "always") {
      step.prepend = PreTokenizerStep::Prepend::kAlways;
    } else if (scheme == "first") {
      step.prepend = PreTokenizerStep::Prepend::kFirst;
    } else if (scheme == "never") {
      step.prepend = PreTokenizerStep::Prepend::kNever;
    } else {
      fail(where, "{}.prepend_scheme '{}' is not always, first or never", context, scheme);
    }
    step.metaspace_split = fields.boolean("split", true);
    if (step.metaspace_split) {
      step.regex = std::make_shared<const Regex>(Regex::escape(step.replacement),
                                                 fmt::format("{}: {}", where, context));
    }
    step.description =
        fmt::format("Metaspace(prepend_scheme={}, split={})", scheme, step.metaspace_split);
    out.add(std::move(step));
  } else if (type == "Digits") {
    PreTokenizerStep step;
    bool individual = fields.boolean("individual_digits", false);
    static const auto digit = std::make_shared<const Regex>(R"(\p{N})", "tokenizer");
    step.regex = digit;
    step.behavior = individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
    step.description = fmt::format("Digits(individual_digits={})", individual);
    out.add(std::move(step));
  } else {
    fail(where, "{}: pre-tokenizer type '{}' is not supported", context, type);
  }
}

void parse_normalizer(const Json& json, const std::string& where, const std::string& context,
                      Normalizer& out) {
  if (json.is_null()) return;
  Fields fields(json, where, context);
  std::string type = fields.string("type");
  if (type == "Sequence") {
    const Json& steps = fields.array("normalizers");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      parse_normalizer(steps[i], where, fmt::format("{}.normalizers[{}]", context, i), out);
    }
  } else if (type == "Replace") {
    Fields pattern(fields.object("pattern"), where, fields.sub("pattern"));
    if (!pattern.has("String")) {
      fail(where, "{}.pattern: only a String pattern is supported for Replace", context);
    }
    NormalizerStep step;
    step.pattern = pattern.string("String");
    step.content = fields.string("content");
    require_utf8(step.pattern, where, fields.sub("pattern"));
    require_utf8(step.content, where, fields.sub("content"));
    if (step.pattern.empty()) fail(where, "{}.pattern is empty", context);
    out.add(std::move(step));
  } else if (type == "NFC") {
    NormalizerStep step;
    step.kind = NormalizerStep::Kind::kNfc;
    out.add(std::move(step));
  } else if (type == "Prepend") {
    NormalizerStep step;
    step.kind = NormalizerStep::Kind::kPrepend;
    step.content = fields.string("prepend");
    require_utf8(step.content, where, fields.sub("prepend"));
    out.add(std::move(step));
  } else {
    fail(where, "{}: normalizer type '{}' is not supported", context, type);
  }
}

struct PostProcessor {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
  std::string description;
};

void parse_post_processor(const Json& json, const std::string& where, const std::string& context,
                          PostProcessor& out) {
  if (json.is_null()) return;
  Fields fields(json, where, context);
  std::string type = fields.string("type");
  auto append_description = [&out](const std::string& text) {
    if (!out.description.empty()) out.description += " + ";
    out.description += text;
  };
  if (type == "Sequence") {
    const Json& steps = fields.array("processors");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      parse_post_processor(steps[i], where, fmt::format("{}.processors[{}]", context, i), out);
    }
  } else if (type == "ByteLevel") {
    append_description("ByteLevel");  // only trims offsets
  } else if (type == "TemplateProcessing") {
    const Json& single = fields.array("single");
    const Json& specials_json = fields.at("special_tokens");
    if (!specials_json.is_object()) fields.wrong("special_tokens", "an object", specials_json);
    std::vector<int32_t> prefix;
    std::vector<int32_t> suffix;
    bool seen_sequence = false;
    for (std::size_t i = 0; i < single.size(); ++i) {
      std::string item_context = fmt::format("{}.single[{}]", context, i);
      Fields item(single[i], where, item_context);
      if (item.has("Sequence")) {
        Fields sequence(item.object("Sequence"), where, item_context + ".Sequence");
        std::string name = sequence.string("id");
        if (name != "A" || seen_sequence) {
          fail(where, "{}: a single-sequence template must name sequence A once", item_context);
        }
        seen_sequence = true;
      } else if (item.has("SpecialToken")) {
        Fields special(item.object("SpecialToken"), where, item_context + ".SpecialToken");
        std::string name = special.string("id");
        if (!specials_json.contains(name)) {
          fail(where, "{}: special token '{}' is missing from special_tokens", item_context, name);
        }
        std::string special_context = fmt::format("{}.special_tokens[{}]", context, name);
        Fields entry(specials_json.at(name), where, special_context);
        const Json& ids = entry.array("ids");
        for (std::size_t k = 0; k < ids.size(); ++k) {
          (seen_sequence ? suffix : prefix)
              .push_back(to_id(ids[k], where, fmt::format("{}.ids[{}]", special_context, k)));
        }
      } else {
        fail(where, "{} must be a Sequence or a SpecialToken", item_context);
      }
    }
    if (!seen_sequence) fail(where, "{}.single does not contain sequence A", context);
    out.prefix.insert(out.prefix.begin(), prefix.begin(), prefix.end());
    out.suffix.insert(out.suffix.end(), suffix.begin(), suffix.end());
    append_description(
        fmt::format("Template(+{} before, +{} after)", prefix.size(), suffix.size()));
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    auto token_id = [&](const char* key) {
      const Json& pair = fields.array(key);
      if (pair.size() != 2) fail(where, "{}.{} must be [token, id]", context, key);
      return to_id(pair[1], where, fields.sub(key));
    };
    int32_t cls = token_id("cls");
    int32_t sep = token_id("sep");
    out.prefix.insert(out.prefix.begin(), cls);
    out.suffix.push_back(sep);
    append_description(type);
  } else {
    fail(where, "{}: post-processor type '{}' is not supported", context, type);
  }
}

// The decoders transformers' tokenizers use: ByteLevel, none, and SentencePiece's sequence
// [Replace(String -> content)], ByteFallback, Fuse, [Strip(' ', 1, 0)].
DecoderSpec parse_decoder(const Json& json, const std::string& where, const std::string& context) {
  DecoderSpec spec;
  if (json.is_null()) return spec;
  Fields fields(json, where, context);
  std::string type = fields.string("type");
  if (type == "ByteLevel") {
    spec.kind = DecoderKind::kByteLevel;
    spec.description = "ByteLevel";
    return spec;
  }
  if (type != "Sequence") {
    fail(where, "{}: decoder type '{}' is not supported (only ByteLevel, or a Sequence)", context,
         type);
  }
  const Json& steps = fields.array("decoders");
  if (steps.size() == 1) return parse_decoder(steps[0], where, context + ".decoders[0]");
  std::vector<std::string> names;
  std::vector<Fields> step_fields;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    step_fields.emplace_back(steps[i], where, fmt::format("{}.decoders[{}]", context, i));
    names.push_back(step_fields.back().string("type"));
  }
  std::size_t next = 0;
  spec.kind = DecoderKind::kByteFallback;
  if (next < names.size() && names[next] == "Replace") {
    const Fields& replace = step_fields[next];
    Fields pattern(replace.object("pattern"), where, replace.sub("pattern"));
    if (!pattern.has("String")) {
      fail(where, "{}.pattern: only a String pattern is supported", replace.context());
    }
    spec.replace_pattern = pattern.string("String");
    spec.replace_content = replace.string("content");
    require_utf8(spec.replace_pattern, where, replace.sub("pattern"));
    require_utf8(spec.replace_content, where, replace.sub("content"));
    ++next;
  }
  bool shape =
      next + 1 < names.size() && names[next] == "ByteFallback" && names[next + 1] == "Fuse";
  next += 2;
  if (shape && next < names.size() && names[next] == "Strip") {
    const Fields& strip = step_fields[next];
    auto number = [&](const char* key) {
      const Json& value = strip.at(key);
      if (!value.is_number_unsigned() && !value.is_number_integer()) {
        strip.wrong(key, "an integer", value);
      }
      return value.get<int64_t>();
    };
    shape = strip.string("content") == " " && number("start") == 1 && number("stop") == 0;
    spec.strip_leading_space = true;
    ++next;
  }
  if (!shape || next != names.size()) {
    fail(where,
         "{}: decoder sequence [{}] is not supported (only [Replace], ByteFallback, Fuse, "
         "[Strip(' ', 1, 0)])",
         context, fmt::join(names, ", "));
  }
  spec.description = fmt::format(
      "{}ByteFallback + Fuse{}",
      spec.replace_pattern.empty()
          ? ""
          : fmt::format("Replace('{}' -> '{}') + ", spec.replace_pattern, spec.replace_content),
      spec.strip_leading_space ? " + Strip(' ', 1, 0)" : "");
  return spec;
}

BpeModel parse_model(const Json& json, const std::string& where) {
  Fields fields(json, where, "model");
  if (fields.has("type") && fields.string("type") != "BPE") {
    fail(where, "model type '{}' is not supported (only BPE)", fields.string("type"));
  }
  if (fields.has("dropout")) {
    const Json& dropout = fields.at("dropout");
    if (!dropout.is_number()) fields.wrong("dropout", "a number", dropout);
    if (dropout.get<double>() != 0.0)
      fail(where, "model.dropout is not supported (BPE dropout is random)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto value = fields.optional_string(key);
    if (value && !value->empty()) fail(where, "model.{} '{}' is not supported", key, *value);
  }
  BpeOptions options;
  options.unk_token = fields.optional_string("unk_token");
  options.fuse_unk = fields.boolean("fuse_unk", false);
  options.byte_fallback = fields.boolean("byte_fallback", false);
  options.ignore_merges = fields.boolean("ignore_merges", false);

  const Json& vocab_json = fields.object("vocab");
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(vocab_json.size());
  for (const auto& [token, id] : vocab_json.items()) {
    require_utf8(token, where, "a model.vocab key");
    vocab.emplace_back(token, to_id(id, where, fmt::format("model.vocab['{}']", token)));
  }
  const Json& merges_json = fields.array("merges");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (std::size_t i = 0; i < merges_json.size(); ++i) {
    const Json& merge = merges_json[i];
    if (merge.is_string()) {
      const auto& text = merge.get_ref<const std::string&>();
      auto space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        fail(where, "model.merges[{}] '{}' is not two tokens separated by one space", i, text);
      }
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      fail(where, "model.merges[{}] must be \"a b\" or [a, b], found {}", i, merge.type_name());
    }
  }
  return BpeModel(std::move(vocab), merges, std::move(options), where);
}

// The id tokenizers' AddedVocabulary gives a token: the model's, else the next free one.
int32_t added_token_id(const TokenizerParts& parts, const std::string& content) {
  if (auto id = parts.model.token_to_id(content)) return *id;
  if (const AddedToken* known = parts.added.find_content(content)) return known->id;
  auto model_size = static_cast<int32_t>(parts.model.token_count());
  int32_t max_added = -1;
  for (const auto& token : parts.added.tokens()) max_added = std::max(max_added, token.id);
  if (max_added < 0) return model_size;
  return (max_added >= model_size || model_size == 0) ? max_added + 1 : model_size;
}

std::optional<std::string> special_token_name(const Json& value, const std::string& where,
                                              const char* key) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value.at("content").is_string()) {
    return value.at("content").get<std::string>();
  }
  fail(where, "'{}' must be a string or an object with 'content'", key);
}

}  // namespace

TokenizerConfig read_tokenizer_config(const Json& json, const std::string& where) {
  Fields fields(json, where, "tokenizer_config");
  TokenizerConfig config;
  if (json.contains("bos_token"))
    config.bos_token = special_token_name(json.at("bos_token"), where, "bos_token");
  if (json.contains("eos_token"))
    config.eos_token = special_token_name(json.at("eos_token"), where, "eos_token");
  for (const char* key : {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (!json.contains(key)) continue;
    if (auto name = special_token_name(json.at(key), where, key)) {
      config.other_special_tokens.push_back(*name);
    }
  }
  if (fields.has("add_bos_token")) config.add_bos_token = fields.boolean("add_bos_token", false);
  if (fields.has("add_eos_token")) config.add_eos_token = fields.boolean("add_eos_token", false);
  return config;
}

std::unique_ptr<TokenizerParts> build_tokenizer_parts(const Json& json, const std::string& where,
                                                      const TokenizerConfig& config,
                                                      std::optional<BpeModel> model) {
  try {
    Fields root(json, where, "tokenizer.json");
    auto parts = std::make_unique<TokenizerParts>();
    parts->source = where;
    if (root.has("truncation") || root.has("padding")) {
      fail(where, "truncation / padding settings are not supported");
    }
    parse_normalizer(root.has("normalizer") ? root.at("normalizer") : Json(), where, "normalizer",
                     parts->normalizer);
    parts->model = model ? std::move(*model) : parse_model(root.at("model"), where);
    parse_pre_tokenizer(root.has("pre_tokenizer") ? root.at("pre_tokenizer") : Json(), where,
                        "pre_tokenizer", parts->pre_tokenizer);
    PostProcessor post;
    parse_post_processor(root.has("post_processor") ? root.at("post_processor") : Json(), where,
                         "post_processor", post);
    parts->decoder =
        parse_decoder(root.has("decoder") ? root.at("decoder") : Json(), where, "decoder");

    if (root.has("added_tokens")) {
      const Json& added = root.array("added_tokens");
      for (std::size_t i = 0; i < added.size(); ++i) {
        std::string context = fmt::format("added_tokens[{}]", i);
        Fields token(added[i], where, context);
        AddedToken entry;
        entry.content = token.string("content");
        require_utf8(entry.content, where, context + ".content");
        entry.id = to_id(token.at("id"), where, context + ".id");
        entry.special = token.boolean("special", false);
        entry.single_word = token.boolean("single_word", false);
        entry.lstrip = token.boolean("lstrip", false);
        entry.rstrip = token.boolean("rstrip", false);
        entry.normalized = token.boolean("normalized", !entry.special);
        if (entry.content.empty()) fail(where, "{}.content is empty", context);
        int32_t expected = added_token_id(*parts, entry.content);
        if (entry.id != expected) {
          fail(where, "{} '{}' has id {}, but the vocabulary makes it {}", context, entry.content,
               entry.id, expected);
        }
        parts->added.add(std::move(entry));
      }
    }
    // transformers adds the named special tokens of the config that are not there yet.
    std::vector<std::string> named;
    if (config.bos_token) named.push_back(*config.bos_token);
    if (config.eos_token) named.push_back(*config.eos_token);
    named.insert(named.end(), config.other_special_tokens.begin(),
                 config.other_special_tokens.end());
    for (const std::string& content : named) {
      if (content.empty() || parts->added.find_content(content) != nullptr) continue;
      require_utf8(content, where, "a special token");
      AddedToken entry;
      entry.content = content;
      entry.id = added_token_id(*parts, content);
      entry.special = true;
      parts->added.add(std::move(entry));
    }
    auto id_of = [&parts](const std::string& content) -> std::optional<int32_t> {
      if (const AddedToken* token = parts->added.find_content(content)) return token->id;
      return parts->model.token_to_id(content);
    };
    if (config.bos_token) parts->bos_id = id_of(*config.bos_token);
    if (config.eos_token) parts->eos_id = id_of(*config.eos_token);

    if (config.add_bos_token || config.add_eos_token) {
      // transformers' update_post_processor: [bos] A [eos] as the flags and tokens allow.
      post = PostProcessor{};
      bool bos = config.add_bos_token.value_or(false) && parts->bos_id.has_value();
      bool eos = config.add_eos_token.value_or(false) && parts->eos_id.has_value();
      if (bos) post.prefix.push_back(*parts->bos_id);
      if (eos) post.suffix.push_back(*parts->eos_id);
      post.description = fmt::format("Template(add_bos={}, add_eos={})", bos, eos);
    }
    parts->prefix_ids = std::move(post.prefix);
    parts->suffix_ids = std::move(post.suffix);
    if (!post.description.empty()) parts->post_processor_description = post.description;
    return parts;
  } catch (const Json::exception& e) {
    fail(where, "malformed tokenizer.json: {}", e.what());
  }
}

}  // namespace xlacel::tokenizer
