#pragma once
// Normalizers with HF `tokenizers` semantics, applied to the text between added tokens before
// pre-tokenization: Replace (a literal string), Prepend and NFC (Unicode canonical composition,
// which transformers' Qwen2, GPT-NeoX and Cohere tokenizer classes install); a Sequence is
// flattened.
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::tokenizer {

struct NormalizerStep {
  enum class Kind { kReplace, kPrepend, kNfc };
  Kind kind = Kind::kReplace;
  std::string pattern;  // kReplace: the literal replaced (non-empty)
  std::string content;  // kReplace: its replacement; kPrepend: the prefix
};

class Normalizer {
 public:
  void add(NormalizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }

  // `text` is non-empty (tokenizers normalizes only non-empty pieces, so Prepend never makes
  // text out of nothing).
  std::string normalize(std::string_view text) const;
  std::string describe() const;

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace xlacel::tokenizer
