#pragma once
// Tool calling on /v1/chat/completions: the request's `tools`, `tool_choice` and
// `parallel_tool_calls` checked field by field; the conversation's assistant `tool_calls` and
// `tool` messages turned into what chat templates read (as transformers takes them); the prompt
// made for the model's tool-call family (chat/tool_call_format.h); and each choice's reply split
// into content and calls (ToolReply), which the response and the stream both use.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/tool_call_format.h"
#include "chat/tool_call_parser.h"
#include "common/json_file.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::server {

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

struct ToolOptions {
  Json tools = Json::array();  // [{"type": "function", "function": {"name", ...}}], checked
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;     // kNamed: the function to call
  bool parallel = true;  // parallel_tool_calls
  // Whether the reply is parsed for calls (OpenAI's "none": the model answers in text, so the
  // tools are neither shown to it nor parsed out).
  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
};

// The rule OpenAI's and Anthropic's APIs both set for tool names: 1 to 64 letters, digits, '_'
// and '-'.
bool valid_function_name(const std::string& name);
// Whether `tools` (checked, chat's nested function shape) has one named `name`.
bool names_tool(const Json& tools, const std::string& name);

// A request's `tools` in a flat shape ({"name", "description", <schema_key>}: Anthropic's
// input_schema, the Responses API's parameters), checked (an array of objects; `check_type`
// first; names by valid_function_name and unique; schemas objects, required when
// `schema_required`) and made chat's nested function tools. `where_of(i)` names tool i as the
// API names fields ("tools.0", "tools[0]"; its fields are that + ".name", ...).
Json flat_function_tools(
    const Json& tools, const std::function<std::string(std::size_t)>& where_of,
    const char* schema_key, bool schema_required,
    const std::function<void(const Json& tool, const std::string& where)>& check_type);

// `tools`, `tool_choice`, `parallel_tool_calls` (400 naming the field when malformed).
ToolOptions parse_tool_options(const Json& body);

// An assistant message's `tool_calls` as templates read them: [{"id", "type": "function",
// "function": {"name", "arguments": object}}], the arguments' JSON string parsed into an object
// (what transformers' templates index and `tojson`); `where` names the message in errors.
Json template_tool_calls(const Json& tool_calls, const std::string& where);
// A `tool` message: {"role": "tool", "tool_call_id", "content"} (+ "name" when given).
Json template_tool_message(const Json& message, const std::string& where, std::string content);

// The messages and template variables that render `tools` for the model: `tools` passed to a
// template that reads them; else the tools described in a system message and past calls and
// results written as text (templates without tool support know no tool_calls nor tool role).
struct ToolPrompt {
  Json messages;
  Json extra_context = Json::object();
};
ToolPrompt tool_prompt(const ToolCallSyntax& syntax, const ToolOptions& options, Json messages);

// Token ids whose text decoding skips (special tokens) but which mark calls in `syntax`.
std::vector<std::pair<int32_t, std::string>> marker_tokens(const ToolCallSyntax& syntax,
                                                           const Tokenizer& tokenizer);
// Those of `markers` that are special tokens of `tokenizer`, with their ids.
std::vector<std::pair<int32_t, std::string>> special_markers(
    const std::vector<std::string>& markers, const Tokenizer& tokenizer);

// One choice's reply as content and tool calls, fed with its token events. `constrained`: the
// reply is under a grammar that admits only well-formed calls, so a call's arguments are
// streamed as they are generated (and a call cut off by max_tokens is kept, as far as it was
// written); otherwise each call is streamed once complete.
class ToolReply {
 public:
  ToolReply(ToolCallSyntax syntax, bool parallel,
            std::vector<std::pair<int32_t, std::string>> markers, bool constrained = false);

  // The event's new content and its delta.tool_calls fragments as OpenAI streams them and its
  // client reassembles them: a call's first, {"index", "id", "type": "function", "function":
  // {"name", "arguments": ""}}, then {"index", "function": {"arguments"}} with the text its
  // arguments grew by.
  struct Delta {
    std::string content;
    std::vector<Json> calls;
  };
  Delta add(const engine::TokenEvent& event) {
    return add(event.text, event.token, event.finished);
  }
  // The same for a token's text alone (the part of it that is the reply's content).
  Delta add(const std::string& text, int32_t token, bool finished);

  // The complete calls, {"index", "id", "type": "function", "function": {"name", "arguments"}}.
  const std::vector<Json>& calls() const { return calls_; }

 private:
  // Fragments for the call at calls_.size() having `call`'s name and arguments so far.
  void stream(const ToolCall& call, std::vector<Json>& fragments);

  ToolCallParser parser_;
  std::vector<std::pair<int32_t, std::string>> markers_;
  std::vector<Json> calls_;
  std::string open_id_;             // the id of the call being streamed; empty: none is
  std::size_t arguments_sent_ = 0;  // how much of its arguments text
};

// A call's id: 9 letters and digits (Mistral's templates refuse any other when it comes back).
std::string new_tool_call_id();

}  // namespace xlacel::server
