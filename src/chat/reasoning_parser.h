#pragma once
// The thinking of reasoning models split from their answer, over streamed text: `<think>...
// </think>` at the start of a reply (Qwen 3, SmolLM3, DeepSeek-R1 distills), or gpt-oss's harmony
// analysis channel (`<|channel|>analysis<|message|>...<|end|>`, then the final channel's header
// `<|start|>assistant<|channel|>final<|message|>` before the answer), is reasoning, the rest
// content, cut as those models' own templates cut a past reply they are given back (reasoning
// without its surrounding newlines, content without its leading ones). A prompt that already
// opened the block (R1 distills' templates end with `<think>\n`) starts inside it. Text is
// released as soon as it is known which side it is on, and the split does not depend on how the
// text was cut into pieces.
#include <optional>
#include <string>
#include <string_view>

namespace xlacel {

// How a family's replies write their thinking: the tags around it, the header between it and the
// answer, and the header of a reply that starts with its answer (harmony's: the final channel's,
// after the analysis one and without it; dropped).
struct ThinkingSyntax {
  std::string open, close, answer_header, direct_answer_header;
  static ThinkingSyntax think_tags();  // <think> ... </think>
  static ThinkingSyntax harmony();     // gpt-oss's analysis and final channels
};

// The syntax of a chat template whose model thinks: `<think>` blocks where the template closes
// them, harmony's where it writes an analysis channel; nullopt for the others.
std::optional<ThinkingSyntax> thinking_syntax(std::string_view chat_template_source);
// Whether a rendered prompt ends inside an open block (only whitespace after the opening).
bool prompt_opens_thinking(std::string_view rendered_prompt, const ThinkingSyntax& syntax);

class ReasoningParser {
 public:
  struct Update {
    std::string reasoning;
    std::string content;
  };

  // `inside`: the prompt opened the block, so the reply starts in it.
  ReasoningParser(ThinkingSyntax syntax, bool inside);

  Update feed(std::string_view text);
  // Past the thinking: what comes now is the answer.
  bool answering() const { return state_ == State::kAfterThinking || state_ == State::kContent; }
  // Inside the block.
  bool thinking() const { return state_ == State::kThinking; }
  // In the answer itself (past the block and any header before the answer).
  bool in_content() const { return state_ == State::kContent; }
  // The end of the reply: what was held back is released (a block never closed is reasoning).
  Update finish();

 private:
  enum class State { kStart, kThinking, kAfterThinking, kContent };
  void step(Update& out, bool final);
  void add_reasoning(Update& out, std::string_view text, bool closing);

  ThinkingSyntax syntax_;
  State state_;
  std::string held_;      // text not yet known to be reasoning or content
  std::string newlines_;  // reasoning's trailing newlines, dropped if the block closes after them
  bool reasoning_started_ = false;
};

}  // namespace xlacel
