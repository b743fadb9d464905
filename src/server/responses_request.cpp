#include "server/responses_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/tool_calls.h"

namespace xlacel::server {

namespace {

std::string at_index(const std::string& parent, std::size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

// A message's or a call output's content: a string or parts: text parts (input_text,
// output_text, refusal) joined, input_image parts ({"image_url": "data:...", "detail"}) to
// `images` where the item may have them (null: it may not); files and audio are refused rather
// than dropped.
Json parts_content(const Json& content, const std::string& where, ImageCollector* images) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw invalid_request(where, fmt::format("'{}' must be a string or an array of content parts, "
                                             "got {}",
                                             where, type_name(content)));
  }
  ContentParts parts;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const std::string part_where = at_index(where, i);
    require_object(content[i], part_where);
    const std::string type = string_field(content[i], "type", part_where + ".type");
    if (type == "input_text" || type == "output_text") {
      parts.text(string_field(content[i], "text", part_where + ".text"));
    } else if (type == "refusal") {
      parts.text(string_field(content[i], "refusal", part_where + ".refusal"));
    } else if (type == "input_image" && images != nullptr) {
      images->check_room(part_where);
      if (field(content[i], "image_url") == nullptr) {
        throw invalid_request(part_where + ".image_url",
                              fmt::format("'{}.image_url' is required (a data: URL; file_id is "
                                          "not supported)",
                                          part_where));
      }
      parts.image(images->url(content[i]["image_url"], part_where));
    } else if (type == "input_image") {
      throw invalid_request(
          part_where, fmt::format("'{}': input_image parts belong to user messages", part_where));
    } else if (type == "input_file" || type == "input_audio") {
      throw invalid_request(part_where,
                            fmt::format("'{}': {} parts are not supported", part_where, type));
    } else {
      throw invalid_request(part_where + ".type",
                            fmt::format("'{}.type' must be input_text, output_text or "
                                        "input_image, got '{}'",
                                        part_where, type));
    }
  }
  return parts.take();
}

// The input items as the messages templates read (server/tool_calls.h).
class InputConverter {
 public:
  InputConverter(const Json& input, ImageCollector& images) : images_(images) {
    if (input.is_string()) {
      out_.push_back({{"role", "user"}, {"content", input.get<std::string>()}});
      return;
    }
    if (!input.is_array()) {
      throw invalid_request("input", fmt::format("'input' must be a string or an array of items, "
                                                 "got {}",
                                                 type_name(input)));
    }
    for (std::size_t i = 0; i < input.size(); ++i) add(input[i], at_index("input", i));
  }

  Json take() { return std::move(out_); }

 private:
  void add(const Json& item, const std::string& where) {
    require_object(item, where);
    const Json* type = field(item, "type");
    if (type != nullptr && !type->is_string()) {
      throw invalid_request(where + ".type", fmt::format("'{}.type' must be a string", where));
    }
    const std::string kind = type != nullptr ? type->get<std::string>() : "message";
    if (kind == "message") {
      message(item, where);
    } else if (kind == "function_call") {
      call(item, where);
    } else if (kind == "function_call_output") {
      output(item, where);
    } else if (kind != "reasoning") {  // earlier turns' thinking is not part of the context
      throw invalid_request(where + ".type",
                            fmt::format("'{}.type' must be message, function_call, "
                                        "function_call_output or reasoning, got '{}'",
                                        where, kind));
    }
  }

  void message(const Json& item, const std::string& where) {
    const std::string role = string_field(item, "role", where + ".role");
    if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
      throw invalid_request(where + ".role",
                            fmt::format("'{}.role' must be user, system, developer or assistant, "
                                        "got '{}'",
                                        where, role));
    }
    Json content = parts_content(required_field(item, "content", where + ".content"),
                                 where + ".content", role == "user" ? &images_ : nullptr);
    // Templates know "system"; the Responses API's newer name for it is "developer".
    out_.push_back(
        {{"role", role == "developer" ? "system" : role}, {"content", std::move(content)}});
  }

  // A call joins the assistant turn before it (text and calls of one reply come as items).
  void call(const Json& item, const std::string& where) {
    const std::string call_id = string_field(item, "call_id", where + ".call_id");
    const std::string name = string_field(item, "name", where + ".name");
    const std::string arguments = string_field(item, "arguments", where + ".arguments");
    names_[call_id] = name;
    const Json openai_call = {{"id", call_id},
                              {"type", "function"},
                              {"function", {{"name", name}, {"arguments", arguments}}}};
    Json converted = template_tool_calls(Json::array({openai_call}), where)[0];
    if (out_.empty() || out_.back()["role"] != "assistant") {
      out_.push_back({{"role", "assistant"}, {"content", ""}});
    }
    Json& turn = out_.back();
    if (!turn.contains("tool_calls")) turn["tool_calls"] = Json::array();
    turn["tool_calls"].push_back(std::move(converted));
  }

  void output(const Json& item, const std::string& where) {
    const std::string call_id = string_field(item, "call_id", where + ".call_id");
    std::string text =
        parts_content(required_field(item, "output", where + ".output"), where + ".output", nullptr)
            .get<std::string>();
    Json message = {{"tool_call_id", call_id}};
    if (auto known = names_.find(call_id); known != names_.end()) message["name"] = known->second;
    out_.push_back(template_tool_message(message, where, std::move(text)));
  }

  ImageCollector& images_;
  Json out_ = Json::array();
  std::map<std::string, std::string> names_;  // call ids to the functions they called
};

// Flat function tools ({"type": "function", "name", "description", "parameters", "strict"}) as
// chat's nested ones, and `tool_choice`.
ToolOptions parse_flat_tools(const Json& body) {
  ToolOptions options;
  if (const Json* tools = field(body, "tools")) {
    options.tools = flat_function_tools(
        *tools, [](std::size_t i) { return at_index("tools", i); }, "parameters", false,
        [](const Json& tool, const std::string& where) {
          if (string_field(tool, "type", where + ".type") != "function") {
            throw invalid_request(where + ".type",
                                  fmt::format("'{}.type' must be function (built-in tools are "
                                              "not supported)",
                                              where));
          }
        });
  }
  if (const Json* choice = field(body, "tool_choice")) {
    if (choice->is_string() && *choice == "auto") {
      options.choice = ToolChoice::kAuto;
    } else if (choice->is_string() && *choice == "none") {
      options.choice = ToolChoice::kNone;
    } else if (choice->is_string() && *choice == "required") {
      options.choice = ToolChoice::kRequired;
    } else if (choice->is_object() && field(*choice, "type") != nullptr &&
               *field(*choice, "type") == "function") {
      options.choice = ToolChoice::kNamed;
      options.named = string_field(*choice, "name", "tool_choice.name");
      if (!names_tool(options.tools, options.named)) {
        throw invalid_request("tool_choice.name", fmt::format("'tool_choice.name' names the "
                                                              "function '{}', which is not in "
                                                              "'tools'",
                                                              options.named));
      }
    } else {
      throw invalid_request("tool_choice",
                            "'tool_choice' must be \"auto\", \"none\", "
                            "\"required\" or {\"type\": \"function\", \"name\": "
                            "...}");
    }
  }
  if (options.tools.empty() && options.choice == ToolChoice::kRequired) {
    throw invalid_request("tool_choice", "'tool_choice' required needs 'tools'");
  }
  if (const Json* parallel = field(body, "parallel_tool_calls")) {
    options.parallel = boolean(*parallel, "parallel_tool_calls");
  }
  return options;
}

// `text.format`: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "name",
// "schema", "strict", "description"} (flat, unlike Chat Completions' response_format).
ResponseFormat parse_text_format(const Json& text) {
  require_object(text, "text");
  ResponseFormat format;
  const Json* spec = field(text, "format");
  if (spec == nullptr) return format;
  require_object(*spec, "text.format");
  const std::string type = string_field(*spec, "type", "text.format.type");
  if (type == "text") return format;
  if (type == "json_object") {
    format.type = ResponseFormat::Type::kJsonObject;
    return format;
  }
  if (type != "json_schema") {
    throw invalid_request("text.format.type",
                          fmt::format("'text.format.type' must be text, json_object or "
                                      "json_schema, got '{}'",
                                      type));
  }
  string_field(*spec, "name", "text.format.name");
  require_object(required_field(*spec, "schema", "text.format.schema"), "text.format.schema");
  if (const Json* strict = field(*spec, "strict")) boolean(*strict, "text.format.strict");
  format.type = ResponseFormat::Type::kJsonSchema;
  format.schema_field = "text.format.schema";
  return format;
}

// Options that would change the result and are not implemented: refused, not ignored.
void refuse_unsupported_options(const Json& body) {
  if (const Json* background = field(body, "background");
      background != nullptr && boolean(*background, "background")) {
    throw invalid_request("background", "'background' responses are not supported");
  }
  for (const char* name : {"conversation", "prompt", "max_tool_calls"}) {
    if (field(body, name) != nullptr) {
      throw invalid_request(name, fmt::format("'{}' is not supported", name));
    }
  }
  if (const Json* truncation = field(body, "truncation");
      truncation != nullptr && *truncation != "disabled") {
    throw invalid_request("truncation",
                          "'truncation' must be \"disabled\" (a conversation that "
                          "does not fit the context is a 400)");
  }
  if (const Json* top = field(body, "top_logprobs");
      top != nullptr && integer(*top, "top_logprobs", 0, 20) != 0) {
    throw invalid_request("top_logprobs", "'top_logprobs' is not supported on /v1/responses");
  }
}

}  // namespace

ResponsesRequest parse_responses_request(const Json& body, uint64_t default_seed,
                                         const ContentOptions& content) {
  require_object(body);
  ResponsesRequest request;
  GenerationRequest& generation = request.generation;
  generation.endpoint = Endpoint::kChat;
  const Json* model = field(body, "model");
  if (model == nullptr || !model->is_string()) {
    throw invalid_request("model", "'model' is required and must be a string");
  }
  generation.model = model->get<std::string>();
  ImageCollector images(content);
  generation.messages = InputConverter(required_field(body, "input", "input"), images).take();
  generation.images = images.take();
  if (generation.messages.empty()) throw invalid_request("input", "'input' has no items");
  generation.tools = parse_flat_tools(body);
  refuse_unsupported_options(body);
  if (field(body, "instructions") != nullptr) {
    request.instructions = string_field(body, "instructions", "instructions");
  }
  if (field(body, "previous_response_id") != nullptr) {
    request.previous_response_id =
        string_field(body, "previous_response_id", "previous_response_id");
  }
  if (const Json* store = field(body, "store")) request.store = boolean(*store, "store");
  if (const Json* value = field(body, "max_output_tokens")) {
    generation.max_tokens = integer(*value, "max_output_tokens", 1, INT32_MAX);
  }
  parse_basic_sampling(body, 2, generation.sampling);
  generation.sampling.seed = default_seed;
  check_sampling(generation.sampling);
  if (const Json* text = field(body, "text")) generation.response_format = parse_text_format(*text);
  if (const Json* value = field(body, "stream")) generation.stream = boolean(*value, "stream");
  if (const Json* metadata = field(body, "metadata")) require_object(*metadata, "metadata");
  if (const Json* reasoning = field(body, "reasoning")) {
    require_object(*reasoning, "reasoning");
    if (const Json* effort = field(*reasoning, "effort")) {
      apply_reasoning_effort(*effort, "reasoning.effort", generation.chat_template_kwargs);
    }
  }

  Json& echo = request.echo;
  echo["tools"] = body.value("tools", Json::array());
  echo["tool_choice"] = body.contains("tool_choice") && !body["tool_choice"].is_null()
                            ? body["tool_choice"]
                            : Json("auto");
  echo["parallel_tool_calls"] = generation.tools.parallel;
  echo["text"] = body.contains("text") && !body["text"].is_null()
                     ? body["text"]
                     : Json{{"format", {{"type", "text"}}}};
  echo["temperature"] = generation.sampling.temperature;
  echo["top_p"] = generation.sampling.top_p;
  echo["max_output_tokens"] = generation.max_tokens > 0 ? Json(generation.max_tokens) : Json();
  echo["instructions"] = body.value("instructions", Json());
  echo["previous_response_id"] = body.value("previous_response_id", Json());
  echo["store"] = request.store;
  echo["metadata"] = body.value("metadata", Json::object());
  echo["reasoning"] = body.value("reasoning", Json());
  echo["truncation"] = "disabled";
  echo["user"] = body.value("user", Json());
  return request;
}

grammar::OrderedJson nested_function_tools(const grammar::OrderedJson& body) {
  grammar::OrderedJson tools = grammar::OrderedJson::array();
  const auto listed = body.find("tools");
  if (listed == body.end() || !listed->is_array()) return tools;
  for (const grammar::OrderedJson& tool : *listed) {
    grammar::OrderedJson function = {{"name", tool.at("name")}};
    if (tool.contains("parameters")) function["parameters"] = tool.at("parameters");
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return tools;
}

}  // namespace xlacel::server
