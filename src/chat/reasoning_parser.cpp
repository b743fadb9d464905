#include "chat/reasoning_parser.h"

#include <algorithm>

namespace xlacel {

namespace {

constexpr std::string_view kWhitespace = " \t\r\n";

// The longest tail of `text` that is a proper prefix of `tag` (a tag that may be coming).
std::size_t partial_tag(std::string_view text, std::string_view tag) {
  for (std::size_t n = std::min(tag.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ThinkingSyntax ThinkingSyntax::think_tags() {
  return {"<think>", "</think>", "", ""};
}

ThinkingSyntax ThinkingSyntax::harmony() {
  return {"<|channel|>analysis<|message|>", "<|end|>",
          "<|start|>assistant<|channel|>final<|message|>", "<|channel|>final<|message|>"};
}

std::optional<ThinkingSyntax> thinking_syntax(std::string_view chat_template_source) {
  if (chat_template_source.find("</think>") != std::string_view::npos) {
    return ThinkingSyntax::think_tags();
  }
  if (chat_template_source.find("<|channel|>analysis") != std::string_view::npos) {
    return ThinkingSyntax::harmony();
  }
  return std::nullopt;
}

bool prompt_opens_thinking(std::string_view rendered_prompt, const ThinkingSyntax& syntax) {
  const std::size_t open = rendered_prompt.rfind(syntax.open);
  if (open == std::string_view::npos) return false;
  return rendered_prompt.find_first_not_of(kWhitespace, open + syntax.open.size()) ==
         std::string_view::npos;
}

ReasoningParser::ReasoningParser(ThinkingSyntax syntax, bool inside)
    : syntax_(std::move(syntax)), state_(inside ? State::kThinking : State::kStart) {}

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
        // Whitespace, then the opening tag, the answer's header (no thinking) or anything else:
        // wait until it is known which.
        const std::string_view open = syntax_.open;
        const std::string_view header = syntax_.direct_answer_header;
        const std::size_t first = held_.find_first_not_of(kWhitespace);
        if (first == std::string::npos && !final) return;
        const std::string_view rest =
            first == std::string::npos ? std::string_view() : std::string_view(held_).substr(first);
        if (rest.starts_with(open)) {
          held_.erase(0, first + open.size());
          state_ = State::kThinking;
        } else if (!header.empty() && rest.starts_with(header)) {
          held_.erase(0, first + header.size());
          state_ = State::kContent;
        } else if (!final &&
                   (open.starts_with(rest) || (!header.empty() && header.starts_with(rest)))) {
          return;
        } else {
          state_ = State::kContent;
        }
        break;
      }
      case State::kThinking: {
        const std::string_view close = syntax_.close;
        const std::size_t found = held_.find(close);
        if (found != std::string::npos) {
          add_reasoning(out, std::string_view(held_).substr(0, found), true);
          held_.erase(0, found + close.size());
          state_ = State::kAfterThinking;
          break;
        }
        const std::size_t keep = final ? 0 : partial_tag(held_, close);
        add_reasoning(out, std::string_view(held_).substr(0, held_.size() - keep), final);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::kAfterThinking: {
        // Newlines, then the answer's header where the syntax has one (dropped), then the answer.
        const std::size_t first = held_.find_first_not_of('\n');
        if (first == std::string::npos) {
          held_.clear();
          return;
        }
        held_.erase(0, first);
        const std::string_view header = syntax_.answer_header;
        if (!header.empty()) {
          if (held_.starts_with(header)) {
            held_.erase(0, header.size());
          } else if (!final && header.starts_with(held_)) {
            return;
          }
        }
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
