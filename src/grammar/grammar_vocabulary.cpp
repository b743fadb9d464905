#include "grammar/grammar_vocabulary.h"

#include "common/error.h"

namespace xlacel::grammar {

std::vector<std::string> grammar_vocabulary(const Tokenizer& tokenizer, int64_t vocab_size) {
  if (!tokenizer.tokens_are_byte_pieces()) {
    fail("tokenizer",
         "its decoder joins tokens with spaces; grammars need byte-level or "
         "byte-fallback tokens");
  }
  std::vector<std::string> vocabulary(static_cast<std::size_t>(vocab_size));
  for (int64_t id = 0; id < vocab_size; ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tokenizer.is_special(token)) continue;
    vocabulary[static_cast<std::size_t>(id)] = tokenizer.token_bytes(token);
  }
  return vocabulary;
}

}  // namespace xlacel::grammar
