#pragma once
// Splits a model's reply into text and tool calls as its family writes them (ToolCallSyntax),
// incrementally: text is fed as it is generated, and each feed returns the text now known to be
// plain content and the calls completed since the last one. Text that might start a call (a
// prefix of the family's marker, a reply opening with '{' for bare JSON calls, whitespace that
// may precede a marker) is withheld until it is known not to be one. A call that turns out
// malformed (not JSON, no "name", arguments not an object) or unfinished when the reply ends
// is content after all: finish() releases it.
//
// A whole reply is parsed by feeding it at once and finishing, so a streamed reply yields
// exactly what the same reply parsed whole does, however it was cut. A reply without calls
// comes out unchanged; with calls, the whitespace around them is dropped.
//
// A reply constrained by a grammar that admits only well-formed calls (`constrained`) can still
// be cut off (max_tokens): there a call whose name and the start of whose arguments object are
// written is a call, with the arguments as far as they go, and each feed reports the call in
// progress (`partial`), so that its arguments can be streamed as they are generated. Calls
// whose object starts with "name" get a partial (as grammars write them); others, and the
// second and later calls of a list, are known when complete.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_call_format.h"

namespace xlacel {

struct ToolCall {
  std::string name;
  std::string arguments;  // the JSON text of an object, as the model wrote it
  bool operator==(const ToolCall&) const = default;
};

struct ToolCallUpdate {
  std::string content;          // new plain text
  std::vector<ToolCall> calls;  // calls completed by this feed, in order
  // `constrained` only: the call being written, its arguments so far (which its arguments when
  // complete extend); absent when none is, or its name or arguments have not started.
  std::optional<ToolCall> partial;
};

class ToolCallParser {
 public:
  // `parallel` false keeps only the first call (OpenAI's parallel_tool_calls).
  explicit ToolCallParser(ToolCallSyntax syntax, bool parallel = true, bool constrained = false);

  ToolCallUpdate feed(std::string_view text);
  ToolCallUpdate finish();  // the reply ended: whatever was withheld is settled

  std::size_t calls() const { return calls_; }

 private:
  enum class Mode {
    kStart,      // bare JSON: nothing but whitespace yet
    kText,       // marker syntax: content, looking for the marker
    kPlain,      // the rest is content
    kCallBody,   // a JSON call (or list) is expected at pos_
    kAfterCall,  // a call ended: its end marker, another call, or text
  };

  void advance(bool final, ToolCallUpdate& out);
  // One step of the state machine; false when it needs more text.
  bool step(bool final, ToolCallUpdate& out);
  bool step_start(bool final);
  bool step_text(bool final, ToolCallUpdate& out);
  bool step_call_body(bool final, ToolCallUpdate& out);
  bool step_named_call(bool final, ToolCallUpdate& out);  // name `name_end` {arguments}
  bool step_after_call(bool final);
  // The call text from call_start_ on was not a call: it is content (constrained: unless it
  // has its name and arguments started, when it is the call as far as it was written).
  void fall_back(ToolCallUpdate& out);
  // The call being written at pos_, once its name is known and its arguments object started.
  std::optional<ToolCall> call_so_far() const;
  void add_content(std::string_view text, ToolCallUpdate& out);
  void add_call(ToolCall call, ToolCallUpdate& out);

  ToolCallSyntax syntax_;
  bool parallel_;
  bool constrained_;
  std::string buffer_;
  std::size_t pos_ = 0;         // buffer_ before this is settled
  std::size_t call_start_ = 0;  // where the call being parsed began (its marker)
  Mode mode_;
  std::string pending_space_;  // content whitespace withheld (it may precede a call)
  bool after_call_ = false;    // content resumed after a call: its leading whitespace is dropped
  std::size_t calls_ = 0;
};

}  // namespace xlacel
