#pragma once
// Pieces of tokenizers' SentencePiece-style decoder (Replace, ByteFallback) that look at one
// token at a time.
#include <cstdint>
#include <string>
#include <string_view>

namespace xlacel::tokenizer {

// The byte a "<0xNN>" token stands for, or -1 for any other token. As tokenizers' ByteFallback:
// six bytes, "<0x" ... ">", and two characters Rust's u8::from_str_radix(_, 16) accepts.
int16_t fallback_byte(std::string_view token);

// `text` with every occurrence of the literal `pattern` replaced by `content` (no-op for an
// empty pattern).
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

}  // namespace xlacel::tokenizer
