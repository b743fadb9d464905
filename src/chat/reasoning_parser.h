#pragma once
// The thinking of reasoning models (Qwen 3, SmolLM3, DeepSeek-R1 distills) split from their
// answer, over streamed text: `<think>...</think>` at the start of a reply is reasoning, the
// rest content, cut as those models' own templates cut a past reply they are given back
// (reasoning without its surrounding newlines, content without its leading ones). A prompt that
// already opened the block (R1 distills' templates end with `<think>\n`) starts inside it. Text
// is released as soon as it is known which side it is on, and the split does not depend on how
// the text was cut into pieces.
#include <string>
#include <string_view>

namespace xlacel {

// Whether a chat template's model thinks in `<think>` blocks (its template closes them).
bool template_thinks(std::string_view chat_template_source);
// Whether a rendered prompt ends inside an open `<think>` block (only whitespace after it).
bool prompt_opens_thinking(std::string_view rendered_prompt);

class ReasoningParser {
 public:
  struct Update {
    std::string reasoning;
    std::string content;
  };

  // `inside`: the prompt opened the block, so the reply starts in it.
  explicit ReasoningParser(bool inside);

  Update feed(std::string_view text);
  // Past the thinking: what comes now is the answer.
  bool answering() const { return state_ == State::kAfterThinking || state_ == State::kContent; }
  // Inside the block.
  bool thinking() const { return state_ == State::kThinking; }
  // The end of the reply: what was held back is released (a block never closed is reasoning).
  Update finish();

 private:
  enum class State { kStart, kThinking, kAfterThinking, kContent };
  void step(Update& out, bool final);
  void add_reasoning(Update& out, std::string_view text, bool closing);

  State state_;
  std::string held_;      // text not yet known to be reasoning or content
  std::string newlines_;  // reasoning's trailing newlines, dropped if the block closes after them
  bool reasoning_started_ = false;
};

}  // namespace xlacel
