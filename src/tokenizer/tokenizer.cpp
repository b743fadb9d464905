#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/error.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "tokenizer/auto_tokenizer_class.h"
#include "tokenizer/byte_fallback.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_classes.h"
#include "tokenizer/tokenizer_json_loader.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel {

using tokenizer::DecoderKind;
using tokenizer::TokenizerParts;

namespace {

// The JSON file beside `path` named `name`, or null when there is none.
Json sibling_json(const std::string& path, const char* name) {
  auto sibling = std::filesystem::path(path).parent_path() / name;
  return std::filesystem::exists(sibling) ? read_json_file(sibling.string()) : Json();
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& path) {
  const Json json = read_json_file(path);
  const Json model_config = sibling_json(path, "config.json");
  const Json tokenizer_config = sibling_json(path, "tokenizer_config.json");
  const std::string config_path =
      (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
  tokenizer::TokenizerConfig config;
  if (!tokenizer_config.is_null()) {
    config = tokenizer::read_tokenizer_config(tokenizer_config, config_path);
    // transformers 5 drops these when a tokenizer.json exists: its post-processor decides.
    config.add_bos_token.reset();
    config.add_eos_token.reset();
  }
  const std::string class_name = tokenizer::auto_tokenizer_class(
      tokenizer::auto_tokenizer_inputs(model_config, tokenizer_config, json));
  auto parts = tokenizer::build_tokenizer_parts(
      tokenizer::tokenizer_json_for_class(class_name, json, tokenizer_config, config_path), path,
      config);
  if (class_name != "TokenizersBackend") parts->origin = "tokenizer.json, as " + class_name;
  return std::make_unique<Tokenizer>(std::move(parts));
}

Tokenizer::Tokenizer(std::unique_ptr<TokenizerParts> parts) : parts_(std::move(parts)) {
  TokenizerParts& p = *parts_;
  std::size_t limit = p.model.id_limit();
  for (const auto& token : p.added.tokens()) {
    limit = std::max(limit, static_cast<std::size_t>(token.id) + 1);
  }
  p.vocab_size = limit;
  for (int32_t id : p.prefix_ids) {
    if (token_text(id).empty()) fail(p.source, "post-processor id {} is not in the vocabulary", id);
  }
  for (int32_t id : p.suffix_ids) {
    if (token_text(id).empty()) fail(p.source, "post-processor id {} is not in the vocabulary", id);
  }
  // Each id's decoded bytes, once: what the decoder makes of the token on its own.
  p.decoded_bytes.resize(limit);
  if (p.decoder.kind == DecoderKind::kByteFallback) p.fallback_byte.assign(limit, -1);
  for (std::size_t id = 0; id < limit; ++id) {
    std::string_view text = token_text(static_cast<int32_t>(id));
    switch (p.decoder.kind) {
      case DecoderKind::kByteLevel: {
        auto bytes = tokenizer::byte_level_to_bytes(text);
        p.decoded_bytes[id] = bytes ? std::move(*bytes) : std::string(text);
        break;
      }
      case DecoderKind::kByteFallback:
        p.fallback_byte[id] = tokenizer::fallback_byte(text);
        p.decoded_bytes[id] =
            tokenizer::replace_all(text, p.decoder.replace_pattern, p.decoder.replace_content);
        break;
      case DecoderKind::kJoin:
        p.decoded_bytes[id] = std::string(text);
        break;
    }
  }
}

Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const TokenizerParts& p = *parts_;
  if (!utf8::is_valid(text)) fail("tokenizer", "input text is not valid UTF-8");
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = p.prefix_ids;
  std::vector<std::string> pieces;
  // As tokenizers' AddedVocabulary: tokens matched on the raw text first, the rest normalized,
  // then tokens matched on the normalized text, then pre-tokenization of what remains.
  std::string normalized;
  for (const auto& raw : p.added.split_raw(text)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    bool at_input_start = raw.text.data() == text.data();
    std::string_view segment_text = raw.text;
    if (!p.normalizer.empty()) {
      normalized = p.normalizer.normalize(raw.text);
      segment_text = normalized;
    }
    for (const auto& segment : p.added.split_normalized(segment_text)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        at_input_start = false;
        continue;
      }
      pieces.clear();
      p.pre_tokenizer.pre_tokenize(segment.text, pieces,
                                   at_input_start && segment.text.data() == segment_text.data());
      for (const std::string& piece : pieces) p.model.tokenize(piece, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), p.suffix_ids.begin(), p.suffix_ids.end());
  return ids;
}

namespace {

// Appends decoder output, dropping the text's first space when the decoder strips it.
void emit(const TokenizerParts& p, Tokenizer::DecodeState& state, std::string_view text,
          std::string& bytes) {
  if (text.empty()) return;
  if (state.at_text_start && p.decoder.strip_leading_space && text.front() == ' ') {
    text.remove_prefix(1);
  }
  state.at_text_start = false;
  bytes += text;
}

// tokenizers' ByteFallback: a finished run of byte tokens is its bytes when they are valid
// UTF-8, else one U+FFFD per byte.
void end_byte_run(const TokenizerParts& p, Tokenizer::DecodeState& state, std::string& bytes) {
  if (state.byte_run.empty()) return;
  std::string run;
  run.swap(state.byte_run);
  if (utf8::is_valid(run)) {
    emit(p, state, run, bytes);
    return;
  }
  std::string replaced;
  for (std::size_t i = 0; i < run.size(); ++i) replaced += "\xEF\xBF\xBD";
  emit(p, state, replaced, bytes);
}

}  // namespace

bool Tokenizer::append_token_bytes(int32_t id, bool skip_special_tokens, DecodeState& state,
                                   std::string& bytes) const {
  const TokenizerParts& p = *parts_;
  if (id < 0 || static_cast<std::size_t>(id) >= p.vocab_size) return false;
  const tokenizer::AddedToken* added = p.added.find_id(id);
  if (added == nullptr && !p.model.has_id(id)) return false;
  if (skip_special_tokens && added != nullptr && added->special) return false;
  auto index = static_cast<std::size_t>(id);
  switch (p.decoder.kind) {
    case DecoderKind::kJoin:
      if (!state.first) bytes += ' ';
      bytes += p.decoded_bytes[index];
      break;
    case DecoderKind::kByteLevel:
      bytes += p.decoded_bytes[index];
      break;
    case DecoderKind::kByteFallback:
      if (p.fallback_byte[index] >= 0) {
        state.byte_run += static_cast<char>(p.fallback_byte[index]);
      } else {
        end_byte_run(p, state, bytes);
        emit(p, state, p.decoded_bytes[index], bytes);
      }
      break;
  }
  state.first = false;
  return true;
}

void Tokenizer::finish_decode(DecodeState& state, std::string& bytes) const {
  end_byte_run(*parts_, state, bytes);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  DecodeState state;
  for (int32_t id : ids) append_token_bytes(id, skip_special_tokens, state, bytes);
  finish_decode(state, bytes);
  std::string text;
  decode_utf8_lossy(bytes, true, text);
  return text;
}

std::size_t Tokenizer::vocab_size() const {
  return parts_->vocab_size;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (const auto* added = parts_->added.find_content(token)) return added->id;
  return parts_->model.token_to_id(token);
}

std::string_view Tokenizer::token_text(int32_t id) const {
  if (const auto* added = parts_->added.find_id(id)) return added->content;
  return parts_->model.id_to_token(id);
}

bool Tokenizer::is_special(int32_t id) const {
  const auto* added = parts_->added.find_id(id);
  return added != nullptr && added->special;
}

bool Tokenizer::tokens_are_byte_pieces() const {
  return parts_->decoder.kind != DecoderKind::kJoin;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const TokenizerParts& p = *parts_;
  if (id < 0 || static_cast<std::size_t>(id) >= p.vocab_size) return {};
  if (p.added.find_id(id) == nullptr && !p.model.has_id(id)) return {};
  const auto index = static_cast<std::size_t>(id);
  if (p.decoder.kind == DecoderKind::kByteFallback && p.fallback_byte[index] >= 0) {
    return std::string(1, static_cast<char>(p.fallback_byte[index]));
  }
  return p.decoded_bytes[index];
}

std::optional<int32_t> Tokenizer::bos_token_id() const {
  return parts_->bos_id;
}
std::optional<int32_t> Tokenizer::eos_token_id() const {
  return parts_->eos_id;
}

std::string Tokenizer::describe() const {
  const TokenizerParts& p = *parts_;
  auto named = [this](std::optional<int32_t> id) {
    return id ? fmt::format("{} ({})", token_text(*id), *id) : std::string("none");
  };
  return fmt::format(
      "BPE{} from {}: vocab {}, {} merges, normalizer {}, pre-tokenizer {}, {} added tokens ({} "
      "special), post-processor {}, decoder {}, bos {}, eos {}",
      p.decoder.kind == DecoderKind::kByteLevel ? " (byte-level)"
      : p.model.options().byte_fallback         ? " (byte fallback)"
                                                : "",
      p.origin, p.vocab_size, p.model.merge_count(), p.normalizer.describe(),
      p.pre_tokenizer.describe(), p.added.tokens().size(), p.added.special_count(),
      p.post_processor_description, p.decoder.description, named(p.bos_id), named(p.eos_id));
}

}  // namespace xlacel
