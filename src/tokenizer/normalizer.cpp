#include "tokenizer/normalizer.h"

#include <fmt/format.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "common/error.h"
#include "tokenizer/byte_fallback.h"

namespace xlacel::tokenizer {

namespace {

std::string nfc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFCInstance(status);
  icu::UnicodeString composed;
  if (U_SUCCESS(status)) {
    composed = normalizer->normalize(icu::UnicodeString::fromUTF8(text), status);
  }
  if (U_FAILURE(status)) fail("tokenizer", "NFC normalization failed: {}", u_errorName(status));
  std::string out;
  composed.toUTF8String(out);
  return out;
}

}  // namespace

std::string Normalizer::normalize(std::string_view text) const {
  std::string current(text);
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kPrepend:
        current.insert(0, step.content);
        break;
      case NormalizerStep::Kind::kNfc:
        current = nfc(current);
        break;
      case NormalizerStep::Kind::kReplace:
        current = replace_all(current, step.pattern, step.content);
        break;
    }
  }
  return current;
}

std::string Normalizer::describe() const {
  if (steps_.empty()) return "none";
  std::string out;
  for (const auto& step : steps_) {
    if (!out.empty()) out += " + ";
    switch (step.kind) {
      case NormalizerStep::Kind::kPrepend:
        out += fmt::format("Prepend('{}')", step.content);
        break;
      case NormalizerStep::Kind::kNfc:
        out += "NFC";
        break;
      case NormalizerStep::Kind::kReplace:
        out += fmt::format("Replace('{}' -> '{}')", step.pattern, step.content);
        break;
    }
  }
  return out;
}

}  // namespace xlacel::tokenizer
