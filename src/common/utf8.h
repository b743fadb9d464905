#pragma once
// UTF-8 helpers shared by the model-file readers (metadata must be valid UTF-8), the tokenizer
// and the template engine.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xlacel::utf8 {

bool is_valid(std::string_view text);

// Length in bytes of the sequence a lead byte starts (1..4), or 0 for a byte that cannot lead.
std::size_t sequence_length(unsigned char lead);

// Length of the longest prefix of `text` that ends on a character boundary and is valid UTF-8
// as far as it goes; a trailing incomplete sequence is excluded.
std::size_t complete_prefix_length(std::string_view text);

// Decodes the code point at text[pos]; nullopt when invalid. Advances pos on success.
std::optional<char32_t> decode(std::string_view text, std::size_t& pos);

void append(std::string& out, char32_t code_point);

}  // namespace xlacel::utf8
