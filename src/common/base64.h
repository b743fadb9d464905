#pragma once
// Base64 (RFC 4648, standard alphabet, padded): how OpenAI's embeddings API sends vectors with
// encoding_format "base64", and how clients send images (data: URLs).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel {

std::string base64_encode(std::span<const std::byte> bytes);
// The bytes `text` encodes; nullopt for a character outside the alphabet, a length that is not
// a multiple of 4 or misplaced padding. Whitespace is not skipped.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace xlacel
