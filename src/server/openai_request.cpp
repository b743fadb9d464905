#include "server/openai_request.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/base64.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/tool_calls.h"

namespace xlacel::server {

namespace {

// A message's content: a string, or parts. Text parts are joined; image_url parts (OpenAI's
// {"type": "image_url", "image_url": {"url", "detail"}}) go to `images` where the message may
// have them (null: it may not).
Json message_content(const Json& content, const std::string& where, ImageCollector* images) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw invalid_request(
        where, fmt::format("'{}' must be a string or an array of content parts, got {}", where,
                           type_name(content)));
  }
  ContentParts parts;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_where = fmt::format("{}[{}]", where, i);
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    if (type != nullptr && *type == "image_url") {
      if (images == nullptr) {
        throw invalid_request(part_where,
                              fmt::format("'{}': image parts belong to user messages", part_where));
      }
      // {"url": ..., "detail": ...} (detail: ignored), or the URL alone.
      const Json* image_url = field(part, "image_url");
      const Json* url =
          image_url != nullptr && image_url->is_object() ? field(*image_url, "url") : image_url;
      if (url == nullptr) {
        images->check_room(part_where);
        throw invalid_request(
            part_where + ".image_url.url",
            fmt::format("'{}.image_url.url' is required (a data: URL)", part_where));
      }
      parts.image(images->url(*url, part_where));
      continue;
    }
    const Json* part_text = part.is_object() ? field(part, "text") : nullptr;
    if (type == nullptr || *type != "text" || part_text == nullptr || !part_text->is_string()) {
      throw invalid_request(where, fmt::format("'{}': only text parts ({{\"type\": \"text\", "
                                               "\"text\": ...}}) and image_url parts are "
                                               "supported",
                                               where));
    }
    parts.text(part_text->get<std::string>());
  }
  return parts.take();
}

Json parse_messages(const Json& body, ImageCollector& images) {
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
        role_name != "assistant" && role_name != "tool") {
      throw invalid_request(
          where + ".role",
          fmt::format("'{}.role' must be system, developer, user, assistant or tool, got '{}'",
                      where, role_name));
    }
    Json content = message_content(message.value("content", Json()), where + ".content",
                                   role_name == "user" ? &images : nullptr);
    if (role_name == "tool") {
      out.push_back(template_tool_message(message, where, content.get<std::string>()));
      continue;
    }
    // Templates know "system"; OpenAI's newer name for it is "developer".
    Json converted = {{"role", role_name == "developer" ? "system" : role_name},
                      {"content", std::move(content)}};
    // A past reply's thinking, which templates that think read (Qwen 3: reasoning_content).
    if (const Json* reasoning = field(message, "reasoning_content");
        role_name == "assistant" && reasoning != nullptr) {
      if (!reasoning->is_string()) {
        throw invalid_request(where + ".reasoning_content",
                              fmt::format("'{}.reasoning_content' must be a string", where));
      }
      converted["reasoning_content"] = *reasoning;
    }
    // Only when there are calls: some templates test `'tool_calls' in message`.
    if (const Json* calls = field(message, "tool_calls");
        role_name == "assistant" && calls != nullptr && !calls->empty()) {
      converted["tool_calls"] = template_tool_calls(*calls, where);
    }
    out.push_back(std::move(converted));
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
  if (const Json* best_of = field(body, "best_of");
      best_of && integer(*best_of, "best_of", 1, 128) != 1) {
    throw invalid_request("best_of", "'best_of' must be 1");
  }
  if (const Json* echo = field(body, "echo"); echo && boolean(*echo, "echo")) {
    throw invalid_request("echo", "'echo' is not supported");
  }
  for (const char* name : {"functions", "suffix"}) {
    const Json* value = field(body, name);
    if (value && !value->empty()) {
      throw invalid_request(name, fmt::format("'{}' is not supported", name));
    }
  }
}

// {"token id": bias, ...}: ids as decimal strings (OpenAI's shape), biases in [-100, 100].
std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& value) {
  if (!value.is_object()) {
    throw invalid_request("logit_bias",
                          fmt::format("'logit_bias' must be an object mapping token ids to "
                                      "biases, got {}",
                                      type_name(value)));
  }
  std::vector<std::pair<int32_t, float>> biases;
  for (const auto& [key, bias] : value.items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 10 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (!digits || id > INT32_MAX) {
      throw invalid_request("logit_bias",
                            fmt::format("'logit_bias' keys must be token ids (non-negative "
                                        "integers as strings), got '{}'",
                                        key));
    }
    if (!bias.is_number() || !(bias.get<double>() >= -100 && bias.get<double>() <= 100)) {
      throw invalid_request("logit_bias", fmt::format("'logit_bias' of token {} must be a number "
                                                      "in [-100, 100], got {}",
                                                      key, bias.dump()));
    }
    biases.emplace_back(static_cast<int32_t>(id), bias.get<float>());
  }
  return biases;
}

// Chat: `logprobs` (boolean) and `top_logprobs` (0..20, needs logprobs). Completions:
// `logprobs` is the number of alternatives (0..20; OpenAI's own limit is 5, vLLM's 20).
void parse_logprobs(Endpoint endpoint, const Json& body, engine::SamplingOptions& sampling) {
  const Json* logprobs = field(body, "logprobs");
  if (endpoint == Endpoint::kCompletion) {
    if (logprobs != nullptr) {
      sampling.logprobs = true;
      sampling.top_logprobs = integer(*logprobs, "logprobs", 0, engine::kMaxTopLogprobs);
    }
    return;
  }
  if (logprobs != nullptr) sampling.logprobs = boolean(*logprobs, "logprobs");
  if (const Json* top = field(body, "top_logprobs")) {
    sampling.top_logprobs = integer(*top, "top_logprobs", 0, engine::kMaxTopLogprobs);
    if (!sampling.logprobs && sampling.top_logprobs > 0) {
      throw invalid_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
  }
}

[[noreturn]] void refuse_image(const std::string& where, const std::string& problem) {
  throw invalid_request(where, fmt::format("'{}': {}", where, problem));
}

std::vector<uint8_t> base64_bytes(std::string_view data, const std::string& where) {
  std::optional<std::vector<uint8_t>> bytes = base64_decode(data);
  if (!bytes) refuse_image(where, "the image's base64 data is malformed");
  if (bytes->empty()) refuse_image(where, "the image's data is empty");
  return std::move(*bytes);
}

}  // namespace

void ImageCollector::check_room(const std::string& where) const {
  if (!options_.images) {
    refuse_image(where, "the model takes no images (it has no vision tower; it reads text only)");
  }
  if (images_.size() >= options_.max_images) {
    refuse_image(where, fmt::format("too many images: a request takes at most {} (serve "
                                    "--max-images-per-request)",
                                    options_.max_images));
  }
}

Json ImageCollector::url(const Json& url, const std::string& where) {
  check_room(where);
  if (!url.is_string()) {
    refuse_image(where, fmt::format("the image's URL must be a string, got {}", type_name(url)));
  }
  const std::string_view text = url.get_ref<const std::string&>();
  if (text.starts_with("http://") || text.starts_with("https://")) {
    refuse_image(where,
                 "remote images are not fetched: send the image as a data: URL "
                 "(data:image/png;base64,...)");
  }
  if (!text.starts_with("data:")) {
    refuse_image(where, "an image must be a data: URL (data:image/png;base64,...)");
  }
  const std::size_t comma = text.find(',');
  if (comma == std::string_view::npos || !text.substr(0, comma).ends_with(";base64")) {
    refuse_image(where,
                 "a data: URL of an image must be base64-encoded (data:image/png;base64,...)");
  }
  return add(where, base64_bytes(text.substr(comma + 1), where));
}

Json ImageCollector::base64(const std::string& media_type, const std::string& data,
                            const std::string& where) {
  check_room(where);
  if (!media_type.starts_with("image/")) {
    refuse_image(where, fmt::format("the media type must be an image's (image/png, image/jpeg, "
                                    "image/gif, image/webp), got '{}'",
                                    media_type));
  }
  return add(where, base64_bytes(data, where));
}

Json ImageCollector::add(const std::string& where, std::vector<uint8_t> bytes) {
  images_.push_back({where, std::move(bytes)});
  return {{"type", "image"}};
}

void ContentParts::text(const std::string& text) {
  if (!text_.empty() && !text.empty()) text_ += separator_;
  text_ += text;
  parts_.push_back({{"type", "text"}, {"text", text}});
}

void ContentParts::image(Json part) {
  images_ = true;
  parts_.push_back(std::move(part));
}

Json ContentParts::take() {
  if (images_) return std::move(parts_);
  return std::move(text_);
}

void parse_basic_sampling(const Json& body, double max_temperature,
                          engine::SamplingOptions& sampling) {
  sampling.temperature = 1;  // both APIs' default
  if (const Json* value = field(body, "temperature")) {
    sampling.temperature = static_cast<float>(number(*value, "temperature", 0, max_temperature));
  }
  if (const Json* value = field(body, "top_p")) {
    sampling.top_p = static_cast<float>(number(*value, "top_p", 0, 1));
  }
  if (const Json* value = field(body, "top_k")) {
    sampling.top_k = integer(*value, "top_k", 0, INT32_MAX);
  }
}

void check_sampling(const engine::SamplingOptions& sampling) {
  if (std::string problem = sampling.validate(); !problem.empty()) {
    const std::string name = problem.substr(0, problem.find(' '));
    throw invalid_request(name, fmt::format("'{}'{}", name, problem.substr(name.size())));
  }
}

void apply_reasoning_effort(const Json& effort, const std::string& field, Json& template_kwargs) {
  static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium",
                                                 "high", "xhigh",   "max"};
  if (!effort.is_string() || kEfforts.count(effort.get<std::string>()) == 0) {
    throw invalid_request(field, fmt::format("'{}' must be none, minimal, low, medium, high, "
                                             "xhigh or max, got {}",
                                             field, effort.dump()));
  }
  if (!template_kwargs.contains("reasoning_effort")) template_kwargs["reasoning_effort"] = effort;
  if (effort == "none" && !template_kwargs.contains("enable_thinking")) {
    template_kwargs["enable_thinking"] = false;
  }
}

GenerationRequest parse_generation_request(Endpoint endpoint, const Json& body,
                                           uint64_t default_seed, const ContentOptions& content) {
  require_object(body);
  GenerationRequest request;
  request.endpoint = endpoint;
  const Json* model = field(body, "model");
  if (model == nullptr || !model->is_string()) {
    throw invalid_request("model", "'model' is required and must be a string");
  }
  request.model = model->get<std::string>();
  if (endpoint == Endpoint::kChat) {
    ImageCollector images(content);
    request.messages = parse_messages(body, images);
    request.images = images.take();
    request.tools = parse_tool_options(body);
    if (const Json* kwargs = field(body, "chat_template_kwargs")) {
      if (!kwargs->is_object()) {
        throw invalid_request(
            "chat_template_kwargs",
            fmt::format("'chat_template_kwargs' must be an object, got {}", type_name(*kwargs)));
      }
      request.chat_template_kwargs = *kwargs;
    }
    if (const Json* effort = field(body, "reasoning_effort")) {
      apply_reasoning_effort(*effort, "reasoning_effort", request.chat_template_kwargs);
    }
    if (const Json* format = field(body, "reasoning_format")) {
      if (*format != "auto" && *format != "none") {
        throw invalid_request(
            "reasoning_format",
            fmt::format("'reasoning_format' must be \"auto\" or \"none\", got {}", format->dump()));
      }
      request.split_reasoning = *format == "auto";
    }
  } else {
    if (field(body, "tools") != nullptr) {
      throw invalid_request("tools", "'tools' belong to /v1/chat/completions");
    }
    request.prompt = parse_prompt(body);
  }
  refuse_unsupported(body);

  // max_completion_tokens is the chat API's newer name for max_tokens.
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const Json* value = field(body, name))
      request.max_tokens = integer(*value, name, 1, INT32_MAX);
  }
  engine::SamplingOptions& sampling = request.sampling;
  parse_basic_sampling(body, 2, sampling);
  if (const Json* value = field(body, "min_p")) {
    sampling.min_p = static_cast<float>(number(*value, "min_p", 0, 1));
  }
  for (auto [name, penalty] : {std::pair{"frequency_penalty", &sampling.frequency_penalty},
                               std::pair{"presence_penalty", &sampling.presence_penalty}}) {
    if (const Json* value = field(body, name)) {
      *penalty = static_cast<float>(number(*value, name, -2, 2));
    }
  }
  if (const Json* value = field(body, "logit_bias")) sampling.logit_bias = parse_logit_bias(*value);
  parse_logprobs(endpoint, body, sampling);
  if (const Json* value = field(body, "n")) request.n = integer(*value, "n", 1, kMaxChoices);
  sampling.seed = default_seed;
  if (const Json* value = field(body, "seed")) {
    sampling.seed = static_cast<uint64_t>(integer(*value, "seed", INT64_MIN, INT64_MAX));
  }
  check_sampling(sampling);
  request.stop = parse_stop(body);
  if (const Json* value = field(body, "response_format")) {
    request.response_format = parse_response_format(*value);
  }
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
