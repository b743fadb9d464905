#pragma once
// The body of POST /v1/embeddings (OpenAI's), checked field by field (an ApiError naming the
// field), and the response's body.
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/json_file.h"

namespace xlacel::server {

// At most this many inputs in one request (OpenAI's limit).
inline constexpr std::size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingsRequest {
  std::string model;
  // `input`: a string, strings, token ids, or lists of token ids; each one embedding.
  std::vector<std::variant<std::string, std::vector<int32_t>>> inputs;
  bool base64 = false;     // encoding_format "base64": little-endian float32 bytes, base64
  int64_t dimensions = 0;  // the first this many values, renormalized; 0: all
};
EmbeddingsRequest parse_embeddings_request(const Json& body);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}.
Json embeddings_response(const EmbeddingsRequest& request,
                         std::span<const std::vector<float>> embeddings, int64_t prompt_tokens);

}  // namespace xlacel::server
