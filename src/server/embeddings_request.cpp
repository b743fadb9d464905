#include "server/embeddings_request.h"

#include <fmt/format.h>

#include <bit>
#include <limits>

#include "common/base64.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace xlacel::server {

namespace {

std::vector<int32_t> token_ids(const Json& list, const std::string& where) {
  std::vector<int32_t> ids;
  for (const Json& id : list) {
    if (!id.is_number_integer()) {
      throw invalid_request("input",
                            fmt::format("{} must hold token ids, got {}", where, type_name(id)));
    }
    ids.push_back(
        static_cast<int32_t>(integer(id, "input", 0, std::numeric_limits<int32_t>::max())));
  }
  if (ids.empty()) throw invalid_request("input", fmt::format("{} is an empty list", where));
  return ids;
}

std::string text_input(const Json& value, const std::string& where) {
  std::string text = value.get<std::string>();
  if (text.empty()) throw invalid_request("input", fmt::format("{} is an empty string", where));
  return text;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const Json& body) {
  require_object(body);
  EmbeddingsRequest request;
  request.model = string_field(body, "model", "model");
  const Json* input = field(body, "input");
  if (input == nullptr) throw invalid_request("input", "'input' is required");
  if (input->is_string()) {
    request.inputs.emplace_back(text_input(*input, "'input'"));
  } else if (input->is_array() && !input->empty() && input->front().is_number()) {
    request.inputs.emplace_back(token_ids(*input, "'input'"));
  } else if (input->is_array() && !input->empty()) {
    if (input->size() > kMaxEmbeddingInputs) {
      throw invalid_request("input", fmt::format("'input' has {} entries; at most {} go in one "
                                                 "request",
                                                 input->size(), kMaxEmbeddingInputs));
    }
    for (std::size_t i = 0; i < input->size(); ++i) {
      const Json& entry = (*input)[i];
      const std::string where = fmt::format("'input[{}]'", i);
      if (entry.is_string()) {
        request.inputs.emplace_back(text_input(entry, where));
      } else if (entry.is_array()) {
        request.inputs.emplace_back(token_ids(entry, where));
      } else {
        throw invalid_request("input", fmt::format("{} must be a string or a list of token ids, "
                                                   "got {}",
                                                   where, type_name(entry)));
      }
    }
  } else {
    throw invalid_request("input",
                          fmt::format("'input' must be a string, a list of strings, "
                                      "token ids or lists of token ids, got {}",
                                      input->is_array() ? "an empty array" : type_name(*input)));
  }
  if (const Json* format = field(body, "encoding_format")) {
    const std::string name = format->is_string() ? format->get<std::string>() : "";
    if (name != "float" && name != "base64") {
      throw invalid_request(
          "encoding_format",
          fmt::format("'encoding_format' must be 'float' or 'base64', got {}", format->dump()));
    }
    request.base64 = name == "base64";
  }
  if (const Json* dimensions = field(body, "dimensions")) {
    request.dimensions = integer(*dimensions, "dimensions", 1, std::numeric_limits<int32_t>::max());
  }
  if (const Json* user = field(body, "user"); user != nullptr && !user->is_string()) {
    throw invalid_request("user", fmt::format("'user' must be a string, got {}", type_name(*user)));
  }
  return request;
}

Json embeddings_response(const EmbeddingsRequest& request,
                         std::span<const std::vector<float>> embeddings, int64_t prompt_tokens) {
  static_assert(std::endian::native == std::endian::little, "base64 floats are little-endian");
  Json data = Json::array();
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    Json vector = request.base64 ? Json(base64_encode(std::as_bytes(std::span(embeddings[i]))))
                                 : Json(embeddings[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(vector)}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", request.model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace xlacel::server
