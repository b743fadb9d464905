#pragma once
// Oniguruma regexes exactly as HF `tokenizers` uses them (onig crate: UTF-8, default syntax, no
// options), compiled once. `find_matches` reproduces `tokenizers`' Pattern::find_matches over the
// onig crate's find_iter, empty-match rules included.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::tokenizer {

struct MatchSpan {
  std::size_t start = 0;
  std::size_t end = 0;
  bool is_match = false;
};

class Regex {
 public:
  // Throws Error("<where>: ...") naming the pattern when it does not compile.
  Regex(const std::string& pattern, std::string_view where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Pattern matching `literal` exactly (what `tokenizers` does for a String split pattern).
  static std::string escape(std::string_view literal);

  // Matches and the gaps between them, covering `text` in order (one non-match span for "").
  std::vector<MatchSpan> find_matches(std::string_view text) const;
  // True when the pattern matches at the very start of `text` (anchored search).
  bool matches_at_start(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* regex_ = nullptr;  // OnigRegex; kept opaque so oniguruma.h stays out of headers
};

}  // namespace xlacel::tokenizer
