#include "server/tokenize_request.h"

#include "server/api_error.h"
#include "server/json_fields.h"

namespace xlacel::server {

TokenizeRequest parse_tokenize_request(const Json& body) {
  require_object(body);
  TokenizeRequest request;
  const Json* content = field(body, "content");
  if (content == nullptr || !content->is_string()) {
    throw invalid_request("content", "'content' is required and must be a string");
  }
  request.content = content->get<std::string>();
  if (const Json* value = field(body, "add_special")) {
    request.add_special = boolean(*value, "add_special");
  }
  if (const Json* value = field(body, "with_pieces")) {
    request.with_pieces = boolean(*value, "with_pieces");
  }
  return request;
}

std::vector<int32_t> parse_detokenize_request(const Json& body, int64_t vocab_size) {
  require_object(body);
  const Json* tokens = field(body, "tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    throw invalid_request("tokens", "'tokens' is required and must be an array of token ids");
  }
  std::vector<int32_t> ids;
  for (const Json& id : *tokens) {
    ids.push_back(static_cast<int32_t>(integer(id, "tokens", 0, vocab_size - 1)));
  }
  return ids;
}

}  // namespace xlacel::server
