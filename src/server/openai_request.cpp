#include "server/openai_request.h"

#include <fmt/format.h>

#include <limits>

#include "server/api_error.h"

namespace xlacel::server {

namespace {

const char* type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

// The field when present and not null; `nullptr` otherwise (clients send null for "default").
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const Json& value, const char* name, double low, double high) {
  if (!value.is_number()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be a number, got {}", name, type_name(value)));
  }
  const double x = value.get<double>();
  if (!(x >= low && x <= high)) {
    throw invalid_request(name,
                          fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, x));
  }
  return x;
}

int64_t integer(const Json& value, const char* name, int64_t low, int64_t high) {
  if (!value.is_number_integer()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be an integer, got {}", name, type_name(value)));
  }
  // Unsigned JSON integers above int64's range read as negative here and fail the range check.
  const int64_t x = value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX
                        ? std::numeric_limits<int64_t>::min()
                        : value.get<int64_t>();
  if (x < low || x > high) {
    throw invalid_request(
        name, fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, value.dump()));
  }
  return x;
}

bool boolean(const Json& value, const char* name) {
  if (!value.is_boolean()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be a boolean, got {}", name, type_name(value)));
  }
  return value.get<bool>();
}

std::string text_content(const Json& content, const std::string& where) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw invalid_request(
        where, fmt::format("'{}' must be a string or an array of text parts, got {}", where,
                           type_name(content)));
  }
  std::string text;
  for (const Json& part : content) {
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    const Json* part_text = part.is_object() ? field(part, "text") : nullptr;
    if (type == nullptr || *type != "text" || part_text == nullptr || !part_text->is_string()) {
      throw invalid_request(where, fmt::format("'{}': only text parts ({{\"type\": \"text\", "
                                               "\"text\": ...}}) are supported",
                                               where));
    }
    text += part_text->get<std::string>();
  }
  return text;
}

Json parse_messages(const Json& body) {
  const Json* messages = field(body, "messages");
  if (messages == nullptr) throw invalid_request("messages", "'messages' is required");
  if (!messages->is_array() || messages->empty()) {
    throw invalid_request("messages", "'messages' must be a non-empty array");
  }
  Json out = Json::array();
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const Json& message = (*messages)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!message.is_object()) {
      throw invalid_request(
          where, fmt::format("'{}' must be an object, got {}", where, type_name(message)));
    }
    const Json* role = field(message, "role");
    if (role == nullptr || !role->is_string()) {
      throw invalid_request(where + ".role", fmt::format("'{}.role' must be a string", where));
    }
    const std::string role_name = role->get<std::string>();
    if (role_name != "system" && role_name != "developer" && role_name != "user" &&
        role_name != "assistant") {
      throw invalid_request(
          where + ".role",
          fmt::format("'{}.role' must be system, developer, user or assistant, got '{}'", where,
                      role_name));
    }
    // Templates know "system"; OpenAI's newer name for it is "developer".
    out.push_back(
        {{"role", role_name == "developer" ? "system" : role_name},
         {"content", text_content(message.value("content", Json()), where + ".content")}});
  }
  return out;
}

std::variant<std::string, std::vector<int32_t>> parse_prompt(const Json& body) {
  const Json* prompt = field(body, "prompt");
  if (prompt == nullptr) throw invalid_request("prompt", "'prompt' is required");
  if (prompt->is_string()) return prompt->get<std::string>();
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    return (*prompt)[0].get<std::string>();
  }
  if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number()) {
    std::vector<int32_t> ids;
    for (const Json& id : *prompt) {
      ids.push_back(static_cast<int32_t>(integer(id, "prompt", 0, INT32_MAX)));
    }
    return ids;
  }
  throw invalid_request("prompt",
                        "'prompt' must be a string, or an array of token ids (one prompt per "
                        "request)");
}

std::vector<std::string> parse_stop(const Json& body) {
  const Json* stop = field(body, "stop");
  if (stop == nullptr) return {};
  if (stop->is_string()) return {stop->get<std::string>()};
  if (stop->is_array() && stop->size() <= 4) {
    std::vector<std::string> out;
    for (const Json& s : *stop) {
      if (!s.is_string() || s.get<std::string>().empty()) break;
      out.push_back(s.get<std::string>());
    }
    if (out.size() == stop->size()) return out;
  }
  throw invalid_request("stop", "'stop' must be a non-empty string or an array of up to 4 of them");
}

// Options xlacel does not implement: refused when they would change the result.
void refuse_unsupported(const Json& body) {
  for (const char* name : {"frequency_penalty", "presence_penalty"}) {
    if (const Json* value = field(body, name); value && number(*value, name, -2, 2) != 0) {
      throw invalid_request(name, fmt::format("'{}' is not supported (only 0)", name));
    }
  }
  if (const Json* n = field(body, "n"); n && integer(*n, "n", 1, 128) != 1) {
    throw invalid_request("n", "'n' must be 1: one choice per request is supported");
  }
  if (const Json* best_of = field(body, "best_of");
      best_of && integer(*best_of, "best_of", 1, 128) != 1) {
    throw invalid_request("best_of", "'best_of' must be 1");
  }
  for (const char* name : {"logprobs", "echo"}) {
    const Json* value = field(body, name);
    if (value && (value->is_boolean() ? value->get<bool>() : true)) {
      throw invalid_request(name, fmt::format("'{}' is not supported", name));
    }
  }
  for (const char* name : {"logit_bias", "tools", "functions", "suffix"}) {
    const Json* value = field(body, name);
    if (value && !value->empty()) {
      throw invalid_request(name, fmt::format("'{}' is not supported", name));
    }
  }
  if (const Json* format = field(body, "response_format")) {
    if (!format->is_object() || format->value("type", "") != "text") {
      throw invalid_request("response_format", "only {\"type\": \"text\"} is supported");
    }
  }
}

}  // namespace

GenerationRequest parse_generation_request(Endpoint endpoint, const Json& body,
                                           uint64_t default_seed) {
  if (!body.is_object()) {
    throw invalid_request("",
                          fmt::format("the body must be a JSON object, got {}", type_name(body)));
  }
  GenerationRequest request;
  request.endpoint = endpoint;
  const Json* model = field(body, "model");
  if (model == nullptr || !model->is_string()) {
    throw invalid_request("model", "'model' is required and must be a string");
  }
  request.model = model->get<std::string>();
  if (endpoint == Endpoint::kChat) {
    request.messages = parse_messages(body);
  } else {
    request.prompt = parse_prompt(body);
  }
  refuse_unsupported(body);

  // max_completion_tokens is the chat API's newer name for max_tokens.
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const Json* value = field(body, name))
      request.max_tokens = integer(*value, name, 1, INT32_MAX);
  }
  engine::SamplingOptions& sampling = request.sampling;
  sampling.temperature = 1;  // OpenAI's default
  if (const Json* value = field(body, "temperature")) {
    sampling.temperature = static_cast<float>(number(*value, "temperature", 0, 2));
  }
  if (const Json* value = field(body, "top_p")) {
    sampling.top_p = static_cast<float>(number(*value, "top_p", 0, 1));
  }
  if (const Json* value = field(body, "top_k"))
    sampling.top_k = integer(*value, "top_k", 0, INT32_MAX);
  if (const Json* value = field(body, "min_p")) {
    sampling.min_p = static_cast<float>(number(*value, "min_p", 0, 1));
  }
  sampling.seed = default_seed;
  if (const Json* value = field(body, "seed")) {
    sampling.seed = static_cast<uint64_t>(integer(*value, "seed", INT64_MIN, INT64_MAX));
  }
  if (std::string problem = sampling.validate(); !problem.empty()) {
    const std::string name = problem.substr(0, problem.find(' '));
    throw invalid_request(name, fmt::format("'{}'{}", name, problem.substr(name.size())));
  }
  request.stop = parse_stop(body);
  if (const Json* value = field(body, "stream")) request.stream = boolean(*value, "stream");
  if (const Json* options = field(body, "stream_options")) {
    if (!options->is_object())
      throw invalid_request("stream_options", "'stream_options' must be an object");
    if (const Json* usage = field(*options, "include_usage")) {
      request.include_usage = boolean(*usage, "stream_options.include_usage");
    }
  }
  return request;
}

}  // namespace xlacel::server
