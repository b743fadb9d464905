#include "tokenizer/normalizer.h"

#include <fmt/format.h>

#include "tokenizer/byte_fallback.h"

namespace xlacel::tokenizer {

std::string Normalizer::normalize(std::string_view text) const {
  std::string current(text);
  for (const NormalizerStep& step : steps_) {
    if (step.kind == NormalizerStep::Kind::kPrepend) {
      current.insert(0, step.content);
      continue;
    }
    current = replace_all(current, step.pattern, step.content);
  }
  return current;
}

std::string Normalizer::describe() const {
  if (steps_.empty()) return "none";
  std::string out;
  for (const auto& step : steps_) {
    if (!out.empty()) out += " + ";
    out += step.kind == NormalizerStep::Kind::kPrepend
               ? fmt::format("Prepend('{}')", step.content)
               : fmt::format("Replace('{}' -> '{}')", step.pattern, step.content);
  }
  return out;
}

}  // namespace xlacel::tokenizer
