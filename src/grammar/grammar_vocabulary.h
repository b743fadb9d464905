#pragma once
// A model's vocabulary as xgrammar matches tokens: each id's bytes as it adds them to a text.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace xlacel::grammar {

// The bytes of every id in [0, vocab_size) (vocab_size: the width of the model's logits, which
// may exceed the tokenizer's): what the tokenizer's decoder makes of the token in the middle of a
// text (byte-level BPE: the GPT-2 byte map undone; SentencePiece: "▁" as a space, <0xNN> as its
// byte). Special tokens and ids the tokenizer lacks are "", which xgrammar never allows (except
// the stop ids it is given). Error naming the tokenizer when its tokens are not byte pieces (a
// decoder that joins tokens with spaces has no such form).
std::vector<std::string> grammar_vocabulary(const Tokenizer& tokenizer, int64_t vocab_size);

}  // namespace xlacel::grammar
