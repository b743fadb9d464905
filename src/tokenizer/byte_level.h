#pragma once
// GPT-2's reversible byte <-> printable-character map (`bytes_to_unicode`), used by the ByteLevel
// pre-tokenizer (bytes -> characters) and decoder (characters -> bytes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xlacel::tokenizer {

// The character (as UTF-8) that stands for `byte`.
std::string_view byte_to_char(unsigned char byte);

// Every byte of `bytes` spelled in the byte alphabet.
std::string bytes_to_byte_level(std::string_view bytes);

// The byte that code point `c` stands for, or nullopt when `c` is not in the alphabet.
std::optional<unsigned char> char_to_byte(char32_t c);

// The bytes a byte-level token spells; nullopt when a character is outside the alphabet
// (valid UTF-8 input assumed).
std::optional<std::string> byte_level_to_bytes(std::string_view token);

// True when every character of `token` (valid UTF-8) is in the byte alphabet.
bool is_byte_level_spelling(std::string_view token);

}  // namespace xlacel::tokenizer
