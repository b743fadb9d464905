#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/error.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_json_loader.h"
#include "tokenizer/tokenizer_parts.h"

namespace xlacel {

using tokenizer::DecoderKind;
using tokenizer::TokenizerParts;

std::unique_ptr<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& path) {
  Json json = read_json_file(path);
  tokenizer::TokenizerConfig config;
  auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    config = tokenizer::read_tokenizer_config(read_json_file(config_path.string()),
                                              config_path.string());
  }
  return std::make_unique<Tokenizer>(tokenizer::build_tokenizer_parts(json, path, config));
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
  for (std::size_t id = 0; id < limit; ++id) {
    std::string_view text = token_text(static_cast<int32_t>(id));
    if (p.decoder == DecoderKind::kByteLevel) {
      auto bytes = tokenizer::byte_level_to_bytes(text);
      p.decoded_bytes[id] = bytes ? std::move(*bytes) : std::string(text);
    } else {
      p.decoded_bytes[id] = std::string(text);
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
  for (const auto& segment : p.added.split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    pieces.clear();
    p.pre_tokenizer.pre_tokenize(segment.text, pieces);
    for (const std::string& piece : pieces) p.model.tokenize(piece, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), p.suffix_ids.begin(), p.suffix_ids.end());
  return ids;
}

bool Tokenizer::append_token_bytes(int32_t id, bool skip_special_tokens, bool first,
                                   std::string& bytes) const {
  const TokenizerParts& p = *parts_;
  if (id < 0 || static_cast<std::size_t>(id) >= p.vocab_size) return false;
  const tokenizer::AddedToken* added = p.added.find_id(id);
  if (added == nullptr && !p.model.has_id(id)) return false;
  if (skip_special_tokens && added != nullptr && added->special) return false;
  if (p.decoder == DecoderKind::kJoin && !first) bytes += ' ';
  bytes += p.decoded_bytes[static_cast<std::size_t>(id)];
  return true;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    if (append_token_bytes(id, skip_special_tokens, first, bytes)) first = false;
  }
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
      "BPE{} from {}: vocab {}, {} merges, pre-tokenizer {}, {} added tokens ({} special), "
      "post-processor {}, bos {}, eos {}",
      p.decoder == DecoderKind::kByteLevel ? " (byte-level)" : "", p.origin, p.vocab_size,
      p.model.merge_count(), p.pre_tokenizer.describe(), p.added.tokens().size(),
      p.added.special_count(), p.post_processor_description, named(p.bos_id), named(p.eos_id));
}

}  // namespace xlacel
