#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/byte_level.h"

namespace xlacel::tokenizer {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void split_by_behavior(std::string_view piece, const std::vector<MatchSpan>& spans,
                       SplitBehavior behavior, std::vector<std::string>& out) {
  struct Part {
    std::size_t start, end;
    bool remove;
  };
  std::vector<Part> parts;
  parts.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& s : spans) parts.push_back({s.start, s.end, false});
      break;
    case SplitBehavior::kRemoved:
      for (const auto& s : spans) parts.push_back({s.start, s.end, s.is_match});
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match == previous_match && !parts.empty()) {
          parts.back().end = s.end;
        } else {
          parts.push_back({s.start, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !parts.empty()) {
          parts.back().end = s.end;
        } else {
          parts.push_back({s.start, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !parts.empty()) {
          parts.back().start = it->start;
        } else {
          parts.push_back({it->start, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  for (const Part& part : parts) {
    if (!part.remove && part.end > part.start) {
      out.emplace_back(piece.substr(part.start, part.end - part.start));
    }
  }
}

namespace {

std::string replace_spaces(std::string_view piece, const std::string& replacement) {
  std::string out;
  out.reserve(piece.size());
  for (char c : piece) {
    if (c == ' ') {
      out += replacement;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void PreTokenizer::pre_tokenize(std::string_view text, std::vector<std::string>& pieces,
                                bool at_input_start) const {
  std::vector<std::string> current;
  if (!text.empty()) current.emplace_back(text);
  std::vector<std::string> next;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (std::size_t index = 0; index < current.size(); ++index) {
      std::string& piece = current[index];
      if (step.kind == PreTokenizerStep::Kind::kMetaspace) {
        // tokenizers checks the piece's offset in the original text: only the first piece of
        // text that starts the input begins at offset 0 (a Removed split before a Metaspace
        // could shift it; no tokenizer builds that).
        bool prepend =
            step.prepend == PreTokenizerStep::Prepend::kAlways ||
            (step.prepend == PreTokenizerStep::Prepend::kFirst && at_input_start && index == 0);
        piece = replace_spaces(piece, step.replacement);
        if (prepend && !piece.starts_with(step.replacement)) piece.insert(0, step.replacement);
        if (step.metaspace_split) {
          split_by_behavior(piece, step.regex->find_matches(piece), SplitBehavior::kMergedWithNext,
                            next);
        } else {
          next.push_back(std::move(piece));
        }
      } else if (step.kind == PreTokenizerStep::Kind::kByteLevel) {
        if (step.add_prefix_space && piece.front() != ' ') piece.insert(piece.begin(), ' ');
        if (step.use_regex) {
          split_by_behavior(piece, step.regex->find_matches(piece), SplitBehavior::kIsolated, next);
        } else {
          next.push_back(std::move(piece));
        }
      } else {
        auto spans = step.regex->find_matches(piece);
        if (step.invert) {
          for (auto& span : spans) span.is_match = !span.is_match;
        }
        split_by_behavior(piece, spans, step.behavior, next);
      }
    }
    if (step.kind == PreTokenizerStep::Kind::kByteLevel) {
      for (std::string& piece : next) piece = bytes_to_byte_level(piece);
    }
    current.swap(next);
  }
  for (std::string& piece : current) pieces.push_back(std::move(piece));
}

std::string PreTokenizer::describe() const {
  if (steps_.empty()) return "none";
  std::string out;
  for (const auto& step : steps_) {
    if (!out.empty()) out += " + ";
    out += step.description;
  }
  return out;
}

}  // namespace xlacel::tokenizer
