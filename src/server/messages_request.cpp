#include "server/messages_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/tool_calls.h"

namespace xlacel::server {

namespace {

// Anthropic's errors name fields as dotted paths: "messages.0.content.1.text".
std::string path(const std::string& parent, const std::string& child) {
  return parent + "." + child;
}
std::string path(const std::string& parent, std::size_t index) {
  return fmt::format("{}.{}", parent, index);
}

std::string block_type(const Json& block, const std::string& where) {
  require_object(block, where);
  return string_field(block, "type", path(where, "type"));
}

[[noreturn]] void unreadable_block(const std::string& type, const std::string& where) {
  if (type == "image") {
    throw invalid_request(
        where, fmt::format("'{}': image blocks belong to user messages' content", where));
  }
  if (type == "document" || type == "search_result") {
    throw invalid_request(where, fmt::format("'{}': {} blocks are not supported (this model reads "
                                             "text only)",
                                             where, type));
  }
  throw invalid_request(
      where, fmt::format("'{}': a block of type '{}' is not supported here", where, type));
}

// Text blocks joined by newlines (the chat template reads one string per message).
void append_text(std::string& text, const std::string& more) {
  if (!text.empty() && !more.empty()) text += "\n";
  text += more;
}

// An image block's image: {"type": "image", "source": {"type": "base64", "media_type", "data"}};
// URL and file sources are refused (nothing is fetched).
Json image_block(const Json& block, const std::string& where, ImageCollector& images) {
  images.check_room(where);
  const std::string source_where = path(where, "source");
  const Json& source = required_field(block, "source", source_where);
  require_object(source, source_where);
  const std::string type = string_field(source, "type", path(source_where, "type"));
  if (type == "url") {
    throw invalid_request(where, fmt::format("'{}': remote images are not fetched: send the image "
                                             "as a base64 source ({{\"type\": \"base64\", "
                                             "\"media_type\", \"data\"}})",
                                             where));
  }
  if (type != "base64") {
    throw invalid_request(path(source_where, "type"),
                          fmt::format("'{}.type' must be base64, got '{}'", source_where, type));
  }
  return images.base64(string_field(source, "media_type", path(source_where, "media_type")),
                       string_field(source, "data", path(source_where, "data")), where);
}

// `system`, or a tool_result's `content`: a string or an array of text blocks.
std::string blocks_text(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw invalid_request(where, fmt::format("'{}' must be a string or an array of text blocks, "
                                             "got {}",
                                             where, type_name(content)));
  }
  std::string text;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const std::string at = path(where, i);
    const std::string type = block_type(content[i], at);
    if (type != "text") unreadable_block(type, at);
    append_text(text, string_field(content[i], "text", path(at, "text")));
  }
  return text;
}

// The messages as templates read them (server/tool_calls.h), the system prompt first.
class MessageConverter {
 public:
  MessageConverter(const Json& body, ImageCollector& images) : images_(images) {
    if (const Json* system = field(body, "system")) {
      std::string text = blocks_text(*system, "system");
      if (!text.empty()) out_.push_back({{"role", "system"}, {"content", std::move(text)}});
    }
    const Json& messages = required_field(body, "messages", "messages");
    if (!messages.is_array() || messages.empty()) {
      throw invalid_request("messages", "'messages' must be a non-empty array");
    }
    for (std::size_t i = 0; i < messages.size(); ++i) add(messages[i], path("messages", i));
  }

  Json take() { return std::move(out_); }

 private:
  void add(const Json& message, const std::string& where) {
    require_object(message, where);
    const std::string role = string_field(message, "role", path(where, "role"));
    if (role != "user" && role != "assistant") {
      throw invalid_request(
          path(where, "role"),
          fmt::format("'{}.role' must be user or assistant, got '{}'", where, role));
    }
    const std::string content_where = path(where, "content");
    const Json& content = required_field(message, "content", content_where);
    ContentParts parts("\n");
    Json calls = Json::array();  // an assistant's tool_use blocks, as OpenAI's tool_calls
    Json results = Json::array();
    if (content.is_string()) {
      parts.text(content.get<std::string>());
    } else if (content.is_array()) {
      for (std::size_t i = 0; i < content.size(); ++i) {
        const std::string at = path(content_where, i);
        const Json& block = content[i];
        const std::string type = block_type(block, at);
        if (type == "text") {
          parts.text(string_field(block, "text", path(at, "text")));
        } else if (type == "image" && role == "user") {
          parts.image(image_block(block, at, images_));
        } else if (type == "tool_use" && role == "assistant") {
          calls.push_back(call(block, at));
        } else if (type == "tool_result" && role == "user") {
          results.push_back(result(block, at));
        } else if ((type == "thinking" || type == "redacted_thinking") && role == "assistant") {
          continue;  // earlier turns' thinking is not part of the context
        } else if (type == "tool_use" || type == "tool_result") {
          throw invalid_request(at, fmt::format("'{}': {} blocks belong to {} messages", at, type,
                                                type == "tool_use" ? "assistant" : "user"));
        } else {
          unreadable_block(type, at);
        }
      }
    } else {
      throw invalid_request(content_where, fmt::format("'{}' must be a string or an array of "
                                                       "content blocks, got {}",
                                                       content_where, type_name(content)));
    }
    for (Json& tool_message : results) out_.push_back(std::move(tool_message));
    Json text = parts.take();
    if (role == "user" && !results.empty() && text == "") return;
    Json converted = {{"role", role}, {"content", std::move(text)}};
    // Only when there are calls: some templates test `'tool_calls' in message`.
    if (!calls.empty()) converted["tool_calls"] = template_tool_calls(calls, where);
    out_.push_back(std::move(converted));
  }

  // A tool_use block as an OpenAI call (what template_tool_calls reads).
  Json call(const Json& block, const std::string& where) {
    const std::string id = string_field(block, "id", path(where, "id"));
    const std::string name = string_field(block, "name", path(where, "name"));
    const Json& input = required_field(block, "input", path(where, "input"));
    require_object(input, path(where, "input"));
    names_[id] = name;
    return {{"id", id},
            {"type", "function"},
            {"function", {{"name", name}, {"arguments", input.dump()}}}};
  }

  // A tool_result block as a tool message, named after the call it answers where that is known.
  Json result(const Json& block, const std::string& where) {
    const std::string id = string_field(block, "tool_use_id", path(where, "tool_use_id"));
    std::string text;
    if (const Json* content = field(block, "content")) {
      text = blocks_text(*content, path(where, "content"));
    }
    if (const Json* is_error = field(block, "is_error")) {
      const std::string name = path(where, "is_error");
      if (boolean(*is_error, name.c_str())) text = "Error: " + text;
    }
    Json message = {{"tool_call_id", id}};
    if (auto known = names_.find(id); known != names_.end()) message["name"] = known->second;
    return template_tool_message(message, where, std::move(text));
  }

  ImageCollector& images_;
  Json out_ = Json::array();
  std::map<std::string, std::string> names_;  // tool_use ids to the tools they called
};

// `tools` as function tools, and `tool_choice`.
ToolOptions parse_anthropic_tools(const Json& body) {
  ToolOptions options;
  if (const Json* tools = field(body, "tools")) {
    options.tools = flat_function_tools(
        *tools, [](std::size_t i) { return path("tools", i); }, "input_schema", true,
        [](const Json& tool, const std::string& where) {
          if (const Json* type = field(tool, "type"); type != nullptr && *type != "custom") {
            throw invalid_request(path(where, "type"),
                                  fmt::format("'{}.type' {}: only client tools (\"custom\", with "
                                              "an input_schema) are supported",
                                              where, type->dump()));
          }
        });
  }
  const Json* choice = field(body, "tool_choice");
  if (choice == nullptr) return options;
  require_object(*choice, "tool_choice");
  const std::string type = string_field(*choice, "type", "tool_choice.type");
  if (type == "auto") {
    options.choice = ToolChoice::kAuto;
  } else if (type == "any") {
    options.choice = ToolChoice::kRequired;
  } else if (type == "none") {
    options.choice = ToolChoice::kNone;
  } else if (type == "tool") {
    options.choice = ToolChoice::kNamed;
    options.named = string_field(*choice, "name", "tool_choice.name");
    if (!names_tool(options.tools, options.named)) {
      throw invalid_request("tool_choice.name", fmt::format("'tool_choice.name' names the tool "
                                                            "'{}', which is not in 'tools'",
                                                            options.named));
    }
  } else {
    throw invalid_request("tool_choice.type",
                          fmt::format("'tool_choice.type' must be auto, any, tool or none, got "
                                      "'{}'",
                                      type));
  }
  if (options.tools.empty() && options.choice == ToolChoice::kRequired) {
    throw invalid_request("tool_choice", "'tool_choice' any requires 'tools'");
  }
  if (const Json* single = field(*choice, "disable_parallel_tool_use")) {
    options.parallel = !boolean(*single, "tool_choice.disable_parallel_tool_use");
  }
  return options;
}

// `thinking`: {"type": "disabled"}, or one of the kinds that let the model think ("enabled"
// with a budget, "adaptive", "between_tools"), passed to templates that switch thinking (Qwen 3,
// SmolLM3) as their `enable_thinking`.
void parse_thinking(const Json& body, GenerationRequest& request) {
  const Json* thinking = field(body, "thinking");
  if (thinking == nullptr) return;
  require_object(*thinking, "thinking");
  const std::string type = string_field(*thinking, "type", "thinking.type");
  if (type != "enabled" && type != "disabled" && type != "adaptive" && type != "between_tools") {
    throw invalid_request("thinking.type", fmt::format("'thinking.type' must be enabled, "
                                                       "adaptive, between_tools or disabled, got "
                                                       "'{}'",
                                                       type));
  }
  request.chat_template_kwargs["enable_thinking"] = type != "disabled";
}

// `output_config.format`: {"type": "json_schema", "schema"}, the reply held to the schema by the
// grammar OpenAI's response_format uses; `effort` as apply_reasoning_effort says.
void parse_output_config(const Json& body, GenerationRequest& request) {
  const Json* config = field(body, "output_config");
  if (config == nullptr) return;
  require_object(*config, "output_config");
  if (const Json* effort = field(*config, "effort")) {
    apply_reasoning_effort(*effort, "output_config.effort", request.chat_template_kwargs);
  }
  const Json* format = field(*config, "format");
  if (format == nullptr) return;
  require_object(*format, "output_config.format");
  const std::string type = string_field(*format, "type", "output_config.format.type");
  if (type != "json_schema") {
    throw invalid_request(
        "output_config.format.type",
        fmt::format("'output_config.format.type' must be json_schema, got '{}'", type));
  }
  require_object(required_field(*format, "schema", "output_config.format.schema"),
                 "output_config.format.schema");
  request.response_format.type = ResponseFormat::Type::kJsonSchema;
  request.response_format.schema_field = "output_config.format.schema";
}

GenerationRequest parse_prompt_fields(const Json& body, const ContentOptions& content) {
  require_object(body);
  GenerationRequest request;
  request.endpoint = Endpoint::kChat;
  request.model = string_field(body, "model", "model");
  ImageCollector images(content);
  request.messages = MessageConverter(body, images).take();
  request.images = images.take();
  request.tools = parse_anthropic_tools(body);
  parse_thinking(body, request);
  parse_output_config(body, request);
  for (const char* name : {"mcp_servers", "container"}) {
    if (const Json* value = field(body, name); value != nullptr && !value->empty()) {
      throw invalid_request(name, fmt::format("'{}' is not supported", name));
    }
  }
  return request;
}

std::vector<std::string> parse_stop_sequences(const Json& value) {
  if (!value.is_array()) {
    throw invalid_request("stop_sequences", fmt::format("'stop_sequences' must be an array of "
                                                        "strings, got {}",
                                                        type_name(value)));
  }
  std::vector<std::string> stops;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string where = path("stop_sequences", i);
    if (!value[i].is_string() || value[i].get<std::string>().empty()) {
      throw invalid_request(where, fmt::format("'{}' must be a non-empty string", where));
    }
    stops.push_back(value[i].get<std::string>());
  }
  return stops;
}

}  // namespace

GenerationRequest parse_messages_request(const Json& body, uint64_t default_seed,
                                         const ContentOptions& content) {
  GenerationRequest request = parse_prompt_fields(body, content);
  request.max_tokens =
      integer(required_field(body, "max_tokens", "max_tokens"), "max_tokens", 1, INT32_MAX);
  // Anthropic's client no longer types temperature, top_p and top_k; they come as extra fields.
  parse_basic_sampling(body, 1, request.sampling);
  request.sampling.seed = default_seed;
  check_sampling(request.sampling);
  if (const Json* value = field(body, "stop_sequences")) {
    request.stop = parse_stop_sequences(*value);
  }
  if (const Json* value = field(body, "stream")) request.stream = boolean(*value, "stream");
  if (const Json* value = field(body, "metadata")) require_object(*value, "metadata");
  return request;
}

GenerationRequest parse_count_tokens_request(const Json& body, const ContentOptions& content) {
  return parse_prompt_fields(body, content);
}

grammar::OrderedJson function_tools(const grammar::OrderedJson& body) {
  grammar::OrderedJson tools = grammar::OrderedJson::array();
  const auto listed = body.find("tools");
  if (listed == body.end() || !listed->is_array()) return tools;
  for (const grammar::OrderedJson& tool : *listed) {
    grammar::OrderedJson function = {{"name", tool.at("name")},
                                     {"parameters", tool.at("input_schema")}};
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return tools;
}

}  // namespace xlacel::server
