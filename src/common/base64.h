#pragma once
// Base64 (RFC 4648, standard alphabet, padded): how OpenAI's embeddings API sends vectors with
// encoding_format "base64".
#include <cstddef>
#include <span>
#include <string>

namespace xlacel {

std::string base64_encode(std::span<const std::byte> bytes);

}  // namespace xlacel
