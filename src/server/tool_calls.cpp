#include "server/tool_calls.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace xlacel::server {

namespace {

const Json& object_field(const Json& parent, const char* name, const std::string& where) {
  const Json* value = field(parent, name);
  if (value == nullptr || !value->is_object()) {
    throw invalid_request(where, fmt::format("'{}' must be an object", where));
  }
  return *value;
}

// The string at `parent`'s "name", checked by valid_function_name; `where` names that field.
std::string function_name(const Json& parent, const std::string& where) {
  std::string name = string_field(parent, "name", where);
  if (!valid_function_name(name)) {
    throw invalid_request(where, fmt::format("'{}' must be 1 to 64 letters, digits, '_' or '-', "
                                             "got '{}'",
                                             where, name));
  }
  return name;
}

Json parse_tool(const Json& tool, const std::string& where) {
  if (!tool.is_object()) {
    throw invalid_request(where,
                          fmt::format("'{}' must be an object, got {}", where, type_name(tool)));
  }
  if (const Json* type = field(tool, "type"); type == nullptr || *type != "function") {
    throw invalid_request(where + ".type", fmt::format("'{}.type' must be \"function\"", where));
  }
  const Json& function = object_field(tool, "function", where + ".function");
  const std::string name = function_name(function, where + ".function.name");
  Json checked = {{"name", name}};
  if (const Json* description = field(function, "description")) {
    if (!description->is_string()) {
      throw invalid_request(where + ".function.description",
                            fmt::format("'{}.function.description' must be a string", where));
    }
    checked["description"] = *description;
  }
  if (const Json* parameters = field(function, "parameters")) {
    if (!parameters->is_object()) {
      throw invalid_request(where + ".function.parameters",
                            fmt::format("'{}.function.parameters' must be a JSON schema object, "
                                        "got {}",
                                        where, type_name(*parameters)));
    }
    checked["parameters"] = *parameters;
  }
  if (const Json* strict = field(function, "strict")) {
    const std::string strict_name = where + ".function.strict";
    checked["strict"] = boolean(*strict, strict_name.c_str());
  }
  return {{"type", "function"}, {"function", std::move(checked)}};
}

void parse_tool_choice(const Json& value, ToolOptions& options) {
  if (value.is_string()) {
    const std::string choice = value.get<std::string>();
    if (choice == "auto") {
      options.choice = ToolChoice::kAuto;
    } else if (choice == "none") {
      options.choice = ToolChoice::kNone;
    } else if (choice == "required") {
      options.choice = ToolChoice::kRequired;
    } else {
      throw invalid_request("tool_choice",
                            fmt::format("'tool_choice' must be \"auto\", \"none\", \"required\" "
                                        "or {{\"type\": \"function\", \"function\": {{\"name\": "
                                        "...}}}}, got \"{}\"",
                                        choice));
    }
  } else if (value.is_object()) {
    if (const Json* type = field(value, "type"); type == nullptr || *type != "function") {
      throw invalid_request("tool_choice.type", "'tool_choice.type' must be \"function\"");
    }
    options.choice = ToolChoice::kNamed;
    options.named = string_field(object_field(value, "function", "tool_choice.function"), "name",
                                 "tool_choice.function.name");
    if (!names_tool(options.tools, options.named)) {
      throw invalid_request("tool_choice.function.name",
                            fmt::format("'tool_choice' names the function '{}', which is not in "
                                        "'tools'",
                                        options.named));
    }
  } else {
    throw invalid_request("tool_choice", fmt::format("'tool_choice' must be a string or an "
                                                     "object, got {}",
                                                     type_name(value)));
  }
  if (options.tools.empty() &&
      (options.choice == ToolChoice::kRequired || options.choice == ToolChoice::kNamed)) {
    throw invalid_request("tool_choice", "'tool_choice' requires 'tools'");
  }
}

// A call as the generic prompt asks for it, for past calls written back as text.
std::string call_text(const Json& call) {
  const Json& function = call["function"];
  return fmt::format("{{\"name\": {}, \"arguments\": {}}}", function["name"].dump(),
                     function["arguments"].is_string() ? function["arguments"].get<std::string>()
                                                       : function["arguments"].dump());
}

// Templates without tool support: past calls become the assistant's text, results a user turn
// (consecutive results one turn), the tools a system message (or, for templates that know no
// system role, the start of the first user turn).
Json generic_messages(const std::string& tools_text, bool system_role, const Json& messages) {
  Json out = Json::array();
  for (const Json& message : messages) {
    if (message["role"] == "tool") {
      const std::string result =
          fmt::format("Result of tool call {}: {}", message["tool_call_id"].get<std::string>(),
                      message["content"].get<std::string>());
      if (!out.empty() && out.back().value("tool_results", false)) {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + result;
      } else {
        out.push_back({{"role", "user"}, {"content", result}, {"tool_results", true}});
      }
      continue;
    }
    Json converted = message;
    if (message.contains("tool_calls")) {
      std::string text = message["content"].get<std::string>();
      for (const Json& call : message["tool_calls"]) {
        text += (text.empty() ? "" : "\n") + call_text(call);
      }
      converted.erase("tool_calls");
      converted["content"] = text;
    }
    out.push_back(std::move(converted));
  }
  for (Json& message : out) message.erase("tool_results");
  if (tools_text.empty()) return out;
  if (system_role) {
    if (!out.empty() && out[0]["role"] == "system") {
      out[0]["content"] = out[0]["content"].get<std::string>() + "\n\n" + tools_text;
    } else {
      out.insert(out.begin(), Json{{"role", "system"}, {"content", tools_text}});
    }
    return out;
  }
  for (Json& message : out) {
    if (message["role"] != "user") continue;
    Json& content = message["content"];
    if (content.is_array()) {  // a message with images: its parts
      content.insert(content.begin(), Json{{"type", "text"}, {"text", tools_text + "\n\n"}});
    } else {
      content = tools_text + "\n\n" + content.get<std::string>();
    }
    break;
  }
  return out;
}

// Past calls and results in the roles of templates that have their own (ToolCallSyntax).
Json own_roles(const ToolCallSyntax& syntax, Json messages) {
  for (Json& message : messages) {
    if (!syntax.result_role.empty() && message["role"] == "tool") {
      message = {{"role", syntax.result_role}, {"content", message["content"]}};
    } else if (!syntax.call_role.empty() && message.contains("tool_calls")) {
      Json calls = Json::array();
      for (const Json& call : message["tool_calls"]) {
        calls.push_back(
            {{"name", call["function"]["name"]}, {"arguments", call["function"]["arguments"]}});
      }
      message = {{"role", syntax.call_role}, {"content", calls.dump()}};
    }
  }
  return messages;
}

// One flat tool (flat_function_tools), its name not among `seen`.
Json flat_function_tool(const Json& tool, const std::string& where, const char* schema_key,
                        bool schema_required, std::set<std::string>& seen) {
  const std::string name = function_name(tool, where + ".name");
  if (!seen.insert(name).second) {
    throw invalid_request(where + ".name", fmt::format("'tools' has two tools named '{}'", name));
  }
  Json function = {{"name", name}};
  if (field(tool, "description") != nullptr) {
    function["description"] = string_field(tool, "description", where + ".description");
  }
  const std::string schema_where = where + "." + schema_key;
  const Json* schema =
      schema_required ? &required_field(tool, schema_key, schema_where) : field(tool, schema_key);
  if (schema != nullptr) {
    require_object(*schema, schema_where);
    function["parameters"] = *schema;
  }
  return {{"type", "function"}, {"function", std::move(function)}};
}

}  // namespace

bool names_tool(const Json& tools, const std::string& name) {
  return std::any_of(tools.begin(), tools.end(),
                     [&](const Json& tool) { return tool["function"]["name"] == name; });
}

bool valid_function_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Json flat_function_tools(
    const Json& tools, const std::function<std::string(std::size_t)>& where_of,
    const char* schema_key, bool schema_required,
    const std::function<void(const Json& tool, const std::string& where)>& check_type) {
  if (!tools.is_array()) {
    throw invalid_request("tools",
                          fmt::format("'tools' must be an array, got {}", type_name(tools)));
  }
  Json out = Json::array();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string where = where_of(i);
    require_object(tools[i], where);
    check_type(tools[i], where);
    out.push_back(flat_function_tool(tools[i], where, schema_key, schema_required, seen));
  }
  return out;
}

ToolOptions parse_tool_options(const Json& body) {
  ToolOptions options;
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) {
      throw invalid_request("tools", fmt::format("'tools' must be an array of function tools, "
                                                 "got {}",
                                                 type_name(*tools)));
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < tools->size(); ++i) {
      Json tool = parse_tool((*tools)[i], fmt::format("tools[{}]", i));
      const std::string name = tool["function"]["name"].get<std::string>();
      if (!names.insert(name).second) {
        throw invalid_request(fmt::format("tools[{}].function.name", i),
                              fmt::format("'tools' has two functions named '{}'", name));
      }
      options.tools.push_back(std::move(tool));
    }
  }
  if (const Json* choice = field(body, "tool_choice")) parse_tool_choice(*choice, options);
  if (const Json* parallel = field(body, "parallel_tool_calls")) {
    options.parallel = boolean(*parallel, "parallel_tool_calls");
  }
  return options;
}

Json template_tool_calls(const Json& tool_calls, const std::string& where) {
  const std::string name = where + ".tool_calls";
  if (!tool_calls.is_array()) {
    throw invalid_request(name, fmt::format("'{}' must be an array", name));
  }
  Json out = Json::array();
  for (std::size_t i = 0; i < tool_calls.size(); ++i) {
    const std::string call_where = fmt::format("{}[{}]", name, i);
    const Json& call = tool_calls[i];
    if (!call.is_object()) {
      throw invalid_request(call_where, fmt::format("'{}' must be an object", call_where));
    }
    if (const Json* type = field(call, "type"); type != nullptr && *type != "function") {
      throw invalid_request(call_where + ".type",
                            fmt::format("'{}.type' must be \"function\"", call_where));
    }
    const Json& function = object_field(call, "function", call_where + ".function");
    Json arguments = Json::object();
    if (const Json* text = field(function, "arguments")) {
      if (!text->is_string()) {
        throw invalid_request(
            call_where + ".function.arguments",
            fmt::format("'{}.function.arguments' must be a string of JSON", call_where));
      }
      // Templates index and `tojson` the arguments: they get the object (as vLLM passes it);
      // text that is not a JSON object stays a string.
      arguments = Json::parse(text->get<std::string>(), nullptr, false);
      if (!arguments.is_object()) arguments = *text;
    }
    Json converted = {{"type", "function"},
                      {"function",
                       {{"name", string_field(function, "name", call_where + ".function.name")},
                        {"arguments", std::move(arguments)}}}};
    if (const Json* id = field(call, "id")) {
      if (!id->is_string()) {
        throw invalid_request(call_where + ".id",
                              fmt::format("'{}.id' must be a string", call_where));
      }
      converted["id"] = *id;
    }
    out.push_back(std::move(converted));
  }
  return out;
}

Json template_tool_message(const Json& message, const std::string& where, std::string content) {
  Json out = {{"role", "tool"},
              {"tool_call_id", string_field(message, "tool_call_id", where + ".tool_call_id")},
              {"content", std::move(content)}};
  if (const Json* name = field(message, "name"); name != nullptr && name->is_string()) {
    out["name"] = *name;
  }
  return out;
}

ToolPrompt tool_prompt(const ToolCallSyntax& syntax, const ToolOptions& options, Json messages) {
  ToolPrompt prompt;
  if (syntax.template_renders_tools) {
    if (options.active()) prompt.extra_context["tools"] = options.tools;
    prompt.messages = own_roles(syntax, std::move(messages));
    return prompt;
  }
  const std::string tools_text =
      options.active()
          ? generic_tool_prompt(options.tools, options.choice != ToolChoice::kAuto, options.named)
          : std::string();
  prompt.messages = generic_messages(tools_text, syntax.template_mentions_system, messages);
  return prompt;
}

std::vector<std::pair<int32_t, std::string>> marker_tokens(const ToolCallSyntax& syntax,
                                                           const Tokenizer& tokenizer) {
  return special_markers(syntax.special_markers, tokenizer);
}

std::vector<std::pair<int32_t, std::string>> special_markers(
    const std::vector<std::string>& candidates, const Tokenizer& tokenizer) {
  std::vector<std::pair<int32_t, std::string>> markers;
  for (const std::string& marker : candidates) {
    const std::optional<int32_t> id = tokenizer.token_id(marker);
    if (id && tokenizer.is_special(*id)) markers.emplace_back(*id, marker);
  }
  return markers;
}

ToolReply::ToolReply(ToolCallSyntax syntax, bool parallel,
                     std::vector<std::pair<int32_t, std::string>> markers, bool constrained)
    : parser_(std::move(syntax), parallel, constrained), markers_(std::move(markers)) {}

ToolReply::Delta ToolReply::add(const std::string& content, int32_t token, bool finished) {
  std::string text = content;
  for (const auto& [id, marker] : markers_) {
    if (token == id) text += marker;  // decoding skipped it: the parser needs it
  }
  ToolCallUpdate update = parser_.feed(text);
  if (finished) {
    ToolCallUpdate last = parser_.finish();
    update.content += last.content;
    for (ToolCall& call : last.calls) update.calls.push_back(std::move(call));
    update.partial.reset();
  }
  Delta delta{std::move(update.content), {}};
  for (ToolCall& call : update.calls) {
    stream(call, delta.calls);
    calls_.push_back(
        {{"index", calls_.size()},
         {"id", std::exchange(open_id_, {})},
         {"type", "function"},
         {"function", {{"name", std::move(call.name)}, {"arguments", std::move(call.arguments)}}}});
    arguments_sent_ = 0;
  }
  if (update.partial) stream(*update.partial, delta.calls);
  return delta;
}

void ToolReply::stream(const ToolCall& call, std::vector<Json>& fragments) {
  const std::size_t index = calls_.size();
  if (open_id_.empty()) {
    open_id_ = new_tool_call_id();
    fragments.push_back({{"index", index},
                         {"id", open_id_},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", ""}}}});
  }
  // A call's arguments so far are a prefix of its arguments when complete (ToolCallParser).
  if (call.arguments.size() > arguments_sent_) {
    fragments.push_back(
        {{"index", index}, {"function", {{"arguments", call.arguments.substr(arguments_sent_)}}}});
    arguments_sent_ = call.arguments.size();
  }
}

std::string new_tool_call_id() {
  static constexpr std::string_view kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::string id(9, ' ');
  for (char& c : id) c = kAlphabet[random() % kAlphabet.size()];
  return id;
}

}  // namespace xlacel::server
