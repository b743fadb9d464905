#pragma once
// The pieces a Tokenizer is assembled from; the loaders fill them in.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace xlacel::tokenizer {

// SentencePiece's space, U+2581, as UTF-8: what Metaspace pre-tokenizers and normalizers put for
// a space, and decoders turn back into one.
inline constexpr const char* kMetaspace = "\u2581";

enum class DecoderKind {
  kByteLevel,  // characters -> bytes through the GPT-2 map (a token outside it: its own bytes)
  kJoin,       // no decoder: tokens joined with single spaces, as tokenizers does
  // SentencePiece's: Replace(pattern -> content), ByteFallback (a run of <0xNN> tokens becomes
  // its bytes, or one U+FFFD per byte when they are not valid UTF-8), Fuse, and optionally
  // Strip(' ', 1, 0) (one leading space of the whole text removed).
  kByteFallback,
};

struct DecoderSpec {
  DecoderKind kind = DecoderKind::kJoin;
  std::string replace_pattern;  // kByteFallback: a literal, empty for no Replace
  std::string replace_content;
  bool strip_leading_space = false;  // kByteFallback
  std::string description = "none";
};

struct TokenizerParts {
  std::string source;  // the file, for messages
  BpeModel model;
  AddedVocabulary added;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::vector<int32_t> prefix_ids;  // post-processor, single sequence: prefix + A + suffix
  std::vector<int32_t> suffix_ids;
  std::string post_processor_description = "none";
  DecoderSpec decoder;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  std::string origin = "tokenizer.json";  // or "gguf"
  // Filled by the Tokenizer: every id's decoded bytes and, for kByteFallback, the byte a
  // <0xNN> token stands for (-1 for other tokens).
  std::vector<std::string> decoded_bytes;
  std::vector<int16_t> fallback_byte;
  std::size_t vocab_size = 0;
};

}  // namespace xlacel::tokenizer
