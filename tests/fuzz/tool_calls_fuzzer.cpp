// Tool-call parser: any reply, in any family's syntax, fed whole or cut anywhere, must give the
// same content and calls, and every call's arguments must be a JSON object.
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_call_format.h"
#include "chat/tool_call_parser.h"
#include "common/json_file.h"

namespace {

struct Parsed {
  std::string content;
  std::vector<xlacel::ToolCall> calls;
  void take(xlacel::ToolCallUpdate update) {
    content += update.content;
    for (auto& call : update.calls) calls.push_back(std::move(call));
  }
};

// Templates that select each family (tool_call_format.h).
constexpr std::string_view kTemplates[] = {
    "{{ tools }}<tool_call>",    "{{ tools }}[TOOL_CALLS]",       "{{ tools }}<|tool_call|>",
    "{{ tools }}<|python_tag|>", "{{ tools }}[TOOL_CALLS][ARGS]", "{{ messages }}"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const auto syntax = xlacel::tool_call_syntax(kTemplates[data[0] % std::size(kTemplates)]);
  const bool parallel = (data[1] & 1) != 0;
  const std::size_t step = 1 + data[2] % 7;  // the cut: pieces of `step` bytes
  const std::string reply(reinterpret_cast<const char*>(data + 3), size - 3);

  Parsed whole;
  xlacel::ToolCallParser whole_parser(syntax, parallel);
  whole.take(whole_parser.feed(reply));
  whole.take(whole_parser.finish());

  Parsed pieces;
  xlacel::ToolCallParser pieces_parser(syntax, parallel);
  for (std::size_t at = 0; at < reply.size(); at += step) {
    pieces.take(pieces_parser.feed(std::string_view(reply).substr(at, step)));
  }
  pieces.take(pieces_parser.finish());

  if (pieces.content != whole.content || pieces.calls != whole.calls) std::abort();
  if (!parallel && whole.calls.size() > 1) std::abort();
  for (const auto& call : whole.calls) {
    if (!xlacel::Json::parse(call.arguments, nullptr, false).is_object()) std::abort();
  }
  return 0;
}
