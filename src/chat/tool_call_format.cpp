#include "chat/tool_call_format.h"

#include <fmt/format.h>

#include <cctype>

namespace xlacel {

namespace {

bool mentions(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// Whether the template reads the `tools` variable at all (a template that never names it renders
// the same with and without tools).
bool reads_tools(std::string_view source) {
  for (std::size_t at = source.find("tools"); at != std::string_view::npos;
       at = source.find("tools", at + 1)) {
    const bool word_before = at > 0 && (std::isalnum(static_cast<unsigned char>(source[at - 1])) ||
                                        source[at - 1] == '_');
    const std::size_t after = at + 5;
    const bool word_after =
        after < source.size() &&
        (std::isalnum(static_cast<unsigned char>(source[after])) || source[after] == '_');
    if (!word_before && !word_after) return true;
  }
  return false;
}

Json function_of(const Json& tool) {
  return tool.at("function");
}

// The arguments' schema of a function without `parameters`: an object (OpenAI's default).
const OrderedJson kNoParameters = {{"type", "object"}, {"properties", OrderedJson::object()}};

}  // namespace

const char* tool_call_family_name(ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::kHermes:
      return "hermes";
    case ToolCallFamily::kMistral:
      return "mistral";
    case ToolCallFamily::kGranite:
      return "granite";
    case ToolCallFamily::kLlama3:
      return "llama3";
    case ToolCallFamily::kGeneric:
      break;
  }
  return "generic";
}

ToolCallSyntax tool_call_syntax(std::string_view source) {
  ToolCallSyntax syntax;
  syntax.template_renders_tools = reads_tools(source);
  syntax.template_mentions_system = mentions(source, "system");
  syntax.arguments_key = "arguments";
  if (!syntax.template_renders_tools) return syntax;  // kGeneric, described by a system message
  if (mentions(source, "<tool_call>")) {
    syntax.family = ToolCallFamily::kHermes;
    syntax.start = "<tool_call>";
    syntax.end = "</tool_call>";
  } else if (mentions(source, "[TOOL_CALLS]")) {
    syntax.family = ToolCallFamily::kMistral;
    syntax.start = "[TOOL_CALLS]";
    syntax.special_markers = {"[TOOL_CALLS]"};
    if (mentions(source, "[ARGS]")) {
      syntax.name_end = "[ARGS]";
      syntax.special_markers.push_back("[ARGS]");
    } else {
      syntax.array_body = true;
    }
  } else if (mentions(source, "<|tool_call|>")) {
    syntax.family = ToolCallFamily::kGranite;
    syntax.start = "<|tool_call|>";
    syntax.array_body = true;
    syntax.special_markers = {"<|tool_call|>"};
    if (mentions(source, "'assistant_tool_call'")) syntax.call_role = "assistant_tool_call";
    if (mentions(source, "'tool_response'")) syntax.result_role = "tool_response";
  } else if (mentions(source, "<|python_tag|>") ||
             (mentions(source, "<|start_header_id|>") && mentions(source, "\"parameters\""))) {
    syntax.family = ToolCallFamily::kLlama3;
    syntax.arguments_key = "parameters";
    syntax.special_markers = {"<|python_tag|>"};
  }
  return syntax;
}

std::string generic_tool_prompt(const Json& tools, bool required,
                                const std::string& required_name) {
  std::string prompt = "You can call the following tools (functions):\n";
  for (const Json& tool : tools) prompt += function_of(tool).dump() + "\n";
  prompt +=
      "\nTo call a tool, reply with only a JSON object of the form {\"name\": <the tool's name>, "
      "\"arguments\": <an object with its arguments>} and nothing else.";
  if (!required_name.empty()) {
    prompt += fmt::format(" You must call the tool \"{}\" now.", required_name);
  } else if (required) {
    prompt += " You must call one of the tools now.";
  } else {
    prompt += " If no tool is needed, answer normally.";
  }
  return prompt;
}

OrderedJson tool_call_structural_tag(const ToolCallSyntax& syntax, const OrderedJson& tools,
                                     bool required, const std::string& only_name, bool parallel) {
  // One tag per callable tool: the text before its arguments, their schema, the text after.
  // Array bodies list their calls inside one `start[...]`, so there the tag is a single call
  // object and the array's brackets and separators come around it.
  const bool bare = syntax.start.empty();
  // As the templates render a list of calls (Mistral v0.3 with a space after the marker).
  const std::string list_open =
      syntax.start + (syntax.family == ToolCallFamily::kMistral ? " [" : "[");
  OrderedJson tags = OrderedJson::array();
  for (const OrderedJson& tool : tools) {
    const OrderedJson& function = tool.at("function");
    const std::string name = function.at("name").get<std::string>();
    if (!only_name.empty() && name != only_name) continue;
    std::string begin =
        fmt::format("{{\"name\": {}, \"{}\": ", Json(name).dump(), syntax.arguments_key);
    std::string end = "}";
    if (!syntax.name_end.empty()) {
      begin = syntax.start + name + syntax.name_end;
      end.clear();
    } else if (syntax.family == ToolCallFamily::kHermes) {
      begin = syntax.start + "\n" + begin;
      end += "\n" + syntax.end;
    }
    tags.push_back({{"type", "tag"},
                    {"begin", begin},
                    {"content",
                     {{"type", "json_schema"},
                      {"json_schema", function.value("parameters", OrderedJson()).is_object()
                                          ? function["parameters"]
                                          : kNoParameters},
                      // Whitespace runs of one character at most: xgrammar allows any by
                      // default, and a model may pad the arguments until its tokens run out.
                      {"max_whitespace_cnt", 1}}},
                    {"end", end}});
  }
  OrderedJson format;
  if (syntax.array_body || bare) {
    // A list of call objects after the marker (none for bare JSON), each one of the tags.
    OrderedJson calls = {{"type", "tags_with_separator"},
                         {"tags", tags},
                         {"separator", bare ? "; " : ", "},
                         {"at_least_one", true},
                         {"stop_after_first", !parallel}};
    if (bare) {
      format = calls;
    } else {
      format = {{"type", "sequence"},
                {"elements", OrderedJson::array({{{"type", "const_string"}, {"value", list_open}},
                                                 calls,
                                                 {{"type", "const_string"}, {"value", "]"}}})}};
    }
    if (!required) {
      // Free text, or the calls when the marker starts them (bare JSON: a reply opening with
      // '{"name": ' is a call).
      const std::string trigger = bare ? "{\"name\": " : syntax.start;
      OrderedJson triggered = OrderedJson::array();
      for (OrderedJson tag : tags) {
        if (bare) {
          triggered.push_back(tag);
          continue;
        }
        tag["begin"] = list_open + tag["begin"].get<std::string>();
        tag["end"] = tag["end"].get<std::string>() + "]";
        triggered.push_back(tag);
      }
      format = {{"type", "triggered_tags"},
                {"triggers", OrderedJson::array({trigger})},
                {"tags", triggered},
                {"at_least_one", false},
                {"stop_after_first", !parallel}};
    }
  } else if (required) {
    // Calls only, one after another as the templates render several (Hermes: a newline between
    // them), and nothing after the last: the reply ends where its calls do.
    format = {{"type", "tags_with_separator"},
              {"tags", tags},
              {"separator", syntax.family == ToolCallFamily::kHermes ? "\n" : ""},
              {"at_least_one", true},
              {"stop_after_first", !parallel}};
  } else {
    format = {{"type", "triggered_tags"},
              {"triggers", OrderedJson::array({syntax.start})},
              {"tags", tags},
              {"at_least_one", false},
              {"stop_after_first", !parallel}};
  }
  return {{"type", "structural_tag"}, {"format", format}};
}

}  // namespace xlacel
