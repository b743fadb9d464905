#pragma once
// The tokenizer transformers builds from a GGUF whose `tokenizer.ggml.model` is "llama"
// (SentencePiece vocabulary: `▁` for spaces, <0xNN> byte tokens, scores, no merges): a BPE with
// byte fallback over merges derived from the vocabulary, shaped by the tokenizer class the
// architecture picks (GemmaTokenizer, phi3's rebuilt one, else LlamaTokenizer).
#include <memory>

#include "tokenizer/tokenizer_parts.h"

namespace xlacel {
class GgufFile;
}

namespace xlacel::tokenizer {

// Throws Error naming the file and the GGUF key for a malformed vocabulary (missing or short
// scores / token types, bad ids).
std::unique_ptr<TokenizerParts> sentencepiece_parts_from_gguf(const GgufFile& gguf);

}  // namespace xlacel::tokenizer
