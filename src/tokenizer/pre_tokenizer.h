#pragma once
// Pre-tokenizers with HF `tokenizers` semantics: ByteLevel, Split, Digits, Metaspace and
// (flattened) Sequence. Each step turns every current piece into zero or more pieces; empty pieces
// vanish.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace xlacel::tokenizer {

// tokenizers' SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The GPT-2 pattern the ByteLevel pre-tokenizer splits with when use_regex is set.
extern const char* const kGpt2Pattern;

struct PreTokenizerStep {
  enum class Kind { kByteLevel, kSplit, kMetaspace };
  // kMetaspace's prepend_scheme: when the replacement is put before a piece not starting with it
  // ("first": only the piece that starts the input text, not one after an added token).
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind = Kind::kSplit;
  // kByteLevel
  bool add_prefix_space = false;
  bool use_regex = true;
  // kMetaspace: spaces become `replacement`; with `metaspace_split`, pieces are cut before it
  std::string replacement;
  Prepend prepend = Prepend::kAlways;
  bool metaspace_split = false;  // its regex: the replacement, behavior kMergedWithNext
  // kSplit (Digits is a Split on \p{N}: Isolated, or Contiguous runs)
  std::shared_ptr<const Regex> regex;  // also the GPT-2 regex for kByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  std::string description;  // for describe()
};

class PreTokenizer {
 public:
  void add(PreTokenizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }

  // Splits `text` (valid UTF-8) into the pieces the model tokenizes, appended to `pieces`.
  // `at_input_start`: `text` begins the input (no added token before it), which Metaspace's
  // "first" prepend scheme looks at.
  void pre_tokenize(std::string_view text, std::vector<std::string>& pieces,
                    bool at_input_start = true) const;
  std::string describe() const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

// Applies a split behavior to the spans `find_matches` produced for `piece` (invert already
// applied), appending the non-empty resulting pieces.
void split_by_behavior(std::string_view piece, const std::vector<MatchSpan>& spans,
                       SplitBehavior behavior, std::vector<std::string>& out);

}  // namespace xlacel::tokenizer
