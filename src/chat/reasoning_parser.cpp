#include "chat/reasoning_parser.h"

#include <algorithm>

namespace xlacel {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kWhitespace = " \t\r\n";

// The longest tail of `text` that is a proper prefix of `tag` (a tag that may be coming).
std::size_t partial_tag(std::string_view text, std::string_view tag) {
  for (std::size_t n = std::min(tag.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

bool template_thinks(std::string_view chat_template_source) {
  return chat_template_source.find(kClose) != std::string_view::npos;
}

bool prompt_opens_thinking(std::string_view rendered_prompt) {
  const std::size_t open = rendered_prompt.rfind(kOpen);
  if (open == std::string_view::npos) return false;
  return rendered_prompt.find_first_not_of(kWhitespace, open + kOpen.size()) ==
         std::string_view::npos;
}

ReasoningParser::ReasoningParser(bool inside) : state_(inside ? State::kThinking : State::kStart) {}

ReasoningParser::Update ReasoningParser::feed(std::string_view text) {
  Update out;
  held_ += text;
  step(out, false);
  return out;
}

ReasoningParser::Update ReasoningParser::finish() {
  Update out;
  step(out, true);
  return out;
}

void ReasoningParser::step(Update& out, bool final) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        // Whitespace, then `<think>` or anything else: wait until it is known which.
        const std::size_t first = held_.find_first_not_of(kWhitespace);
        if (first == std::string::npos && !final) return;
        const std::string_view rest =
            first == std::string::npos ? std::string_view() : std::string_view(held_).substr(first);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, first + kOpen.size());
          state_ = State::kThinking;
        } else if (!final && kOpen.starts_with(rest)) {
          return;
        } else {
          state_ = State::kContent;
        }
        break;
      }
      case State::kThinking: {
        const std::size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          add_reasoning(out, std::string_view(held_).substr(0, close), true);
          held_.erase(0, close + kClose.size());
          state_ = State::kAfterThinking;
          break;
        }
        const std::size_t keep = final ? 0 : partial_tag(held_, kClose);
        add_reasoning(out, std::string_view(held_).substr(0, held_.size() - keep), final);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::kAfterThinking: {
        const std::size_t first = held_.find_first_not_of('\n');
        if (first == std::string::npos) {
          held_.clear();
          return;
        }
        held_.erase(0, first);
        state_ = State::kContent;
        break;
      }
      case State::kContent:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

void ReasoningParser::add_reasoning(Update& out, std::string_view text, bool closing) {
  if (!reasoning_started_) {
    const std::size_t first = text.find_first_not_of('\n');
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    reasoning_started_ = true;
  }
  std::string pending = newlines_ + std::string(text);
  const std::size_t last = pending.find_last_not_of('\n');
  const std::size_t kept = last == std::string::npos ? 0 : last + 1;
  out.reasoning.append(pending, 0, kept);
  newlines_ = closing ? std::string() : pending.substr(kept);
}

}  // namespace xlacel
