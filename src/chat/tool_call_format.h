#pragma once
// How a model family writes tool calls, chosen from its chat template's text: what the template
// renders for an assistant's tool_calls is what the model was trained to emit.
//
//   template mentions          family     a call, as the model writes it
//   "<tool_call>"              kHermes    <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//                                         (Qwen 2.5/3, Hermes 2/3), one block per call
//   "[TOOL_CALLS]"             kMistral   [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
//   "[TOOL_CALLS]" + "[ARGS]"  kMistral   [TOOL_CALLS]name[ARGS]{...} per call (Mistral's newer
//                                         tokenizers: Small 3.2, Devstral, Magistral)
//   "<|tool_call|>"            kGranite   <|tool_call|>[{"name": ..., "arguments": {...}}, ...]
//   "<|python_tag|>" or a      kLlama3    {"name": ..., "parameters": {...}} as the whole reply
//   Llama 3 header + tools                (calls joined by ';'), optionally after <|python_tag|>
//   anything else              kGeneric   {"name": ..., "arguments": {...}} as the whole reply
//
// kGeneric is also the fallback for templates that do not render `tools` at all: the tools are
// then described in a system message (generic_tool_prompt) that asks for that JSON object.
// Markers that are special tokens (skipped when text is decoded) are put back into the text
// by the caller from the token ids (ToolCallSyntax::special_markers).
#include <string>
#include <string_view>
#include <vector>

#include "common/json_file.h"

namespace xlacel {

using OrderedJson = nlohmann::ordered_json;

enum class ToolCallFamily { kHermes, kMistral, kGranite, kLlama3, kGeneric };
const char* tool_call_family_name(ToolCallFamily family);

struct ToolCallSyntax {
  ToolCallFamily family = ToolCallFamily::kGeneric;
  // Text that opens a call (or a list of calls); empty for bare JSON (kLlama3, kGeneric),
  // where a call is recognised only as the reply's first non-space character '{'.
  std::string start;
  std::string end;          // text that closes a call ("</tool_call>"), or empty
  bool array_body = false;  // the calls after `start` are a JSON array (Mistral, Granite)
  // Between a call's name and its arguments object, when calls are written `start` name
  // `name_end` {arguments} ("[ARGS]"); empty: calls are JSON objects with a "name".
  std::string name_end;
  std::string arguments_key;              // "arguments" or "parameters" (kLlama3)
  bool template_renders_tools = false;    // the template reads `tools`; else generic_tool_prompt
  bool template_mentions_system = false;  // it has a system role (where generic tools go)
  // Templates with roles of their own for past calls and results (Granite 3.0:
  // "assistant_tool_call" with the calls' JSON list as content, "tool_response"); empty: an
  // assistant message with `tool_calls`, and role "tool", as OpenAI and transformers have them.
  std::string call_role;
  std::string result_role;
  // Strings of marker tokens that decoding skips when they are special tokens.
  std::vector<std::string> special_markers;
};

// The syntax a chat template implies (see the table above).
ToolCallSyntax tool_call_syntax(std::string_view template_source);

// The system message text that describes `tools` (OpenAI's list of {"type": "function",
// "function": {...}}) to a model whose template does not render them, and asks for a JSON call.
// `required_name`: the function the reply must call (tool_choice names one), "" when free;
// `required`: a call is mandatory.
std::string generic_tool_prompt(const Json& tools, bool required, const std::string& required_name);

// An xgrammar structural tag (`{"type": "structural_tag", "format": {...}}`) that admits exactly
// the family's call syntax with each tool's `parameters` as the JSON schema of its arguments:
// with `required` the reply is one call or more (only that of `only_name` when it is not empty),
// else free text in which a call may start at the family's marker; `parallel` false stops after
// the first call.
// `tools` keep the key order they came with (the order in which the grammar lays out each
// tool's properties).
OrderedJson tool_call_structural_tag(const ToolCallSyntax& syntax, const OrderedJson& tools,
                                     bool required, const std::string& only_name, bool parallel);

}  // namespace xlacel
