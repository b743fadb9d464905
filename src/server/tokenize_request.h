#pragma once
// The bodies of POST /tokenize and POST /detokenize, as llama.cpp's server takes them, checked
// field by field (an ApiError naming the field).
#include <cstdint>
#include <string>
#include <vector>

#include "common/json_file.h"

namespace xlacel::server {

// {"content": string, "add_special": bool = false, "with_pieces": bool = false}
struct TokenizeRequest {
  std::string content;
  bool add_special = false;  // the model's special tokens (BOS, ...) around the text
  bool with_pieces = false;  // answer [{"id", "piece"}] instead of ids
};
TokenizeRequest parse_tokenize_request(const Json& body);

// {"tokens": [ids]}: every id in [0, vocab_size).
std::vector<int32_t> parse_detokenize_request(const Json& body, int64_t vocab_size);

}  // namespace xlacel::server
