#pragma once
// The pieces a Tokenizer is assembled from; the loaders fill them in.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/pre_tokenizer.h"

namespace xlacel::tokenizer {

enum class DecoderKind {
  kByteLevel,  // characters -> bytes through the GPT-2 map (a token outside it: its own bytes)
  kJoin,       // no decoder: tokens joined with single spaces, as tokenizers does
};

struct TokenizerParts {
  std::string source;  // the file, for messages
  BpeModel model;
  AddedVocabulary added;
  PreTokenizer pre_tokenizer;
  std::vector<int32_t> prefix_ids;  // post-processor, single sequence: prefix + A + suffix
  std::vector<int32_t> suffix_ids;
  std::string post_processor_description = "none";
  DecoderKind decoder = DecoderKind::kJoin;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  std::string origin = "tokenizer.json";  // or "gguf"
  // Filled by the Tokenizer: every id's decoded bytes and its vocabulary string.
  std::vector<std::string> decoded_bytes;
  std::size_t vocab_size = 0;
};

}  // namespace xlacel::tokenizer
