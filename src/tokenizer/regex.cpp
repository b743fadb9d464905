#include "tokenizer/regex.h"

#include <oniguruma.h>

#include <cctype>
#include <mutex>

#include "common/error.h"

namespace xlacel::tokenizer {

namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

const UChar* bytes_of(std::string_view text) {
  return reinterpret_cast<const UChar*>(text.data());
}

// Frees an OnigRegion on scope exit.
struct RegionGuard {
  OnigRegion* region = onig_region_new();
  ~RegionGuard() { onig_region_free(region, 1); }
};

// Length of the UTF-8 character starting at text[pos] (1 for anything unexpected).
std::size_t char_length(std::string_view text, std::size_t pos) {
  auto lead = static_cast<unsigned char>(text[pos]);
  std::size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return pos + length <= text.size() ? length : 1;
}

}  // namespace

Regex::Regex(const std::string& pattern, std::string_view where) : pattern_(pattern) {
  initialize_oniguruma();
  OnigRegex compiled = nullptr;
  OnigErrorInfo info;
  int status = onig_new(&compiled, bytes_of(pattern), bytes_of(pattern) + pattern.size(),
                        ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (status != ONIG_NORMAL) {
    UChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, status, &info);
    fail(where, "regex /{}/ does not compile: {}", pattern, reinterpret_cast<const char*>(message));
  }
  regex_ = compiled;
}

Regex::~Regex() {
  if (regex_ != nullptr) onig_free(static_cast<OnigRegex>(regex_));
}

std::string Regex::escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    auto byte = static_cast<unsigned char>(c);
    // A backslash before ASCII punctuation always means the character itself in Oniguruma.
    if (byte < 0x80 && std::ispunct(byte)) out += '\\';
    out += c;
  }
  return out;
}

std::vector<MatchSpan> Regex::find_matches(std::string_view text) const {
  if (text.empty()) return {MatchSpan{0, 0, false}};
  auto regex = static_cast<OnigRegex>(regex_);
  RegionGuard guard;
  const UChar* begin = bytes_of(text);
  const UChar* end = begin + text.size();
  std::vector<MatchSpan> spans;
  std::size_t previous = 0;
  std::size_t last_end = 0;  // where the next search starts (onig crate's FindMatches)
  bool have_last_match = false;
  std::size_t last_match_end = 0;
  while (last_end <= text.size()) {
    onig_region_clear(guard.region);
    int found =
        onig_search(regex, begin, end, begin + last_end, end, guard.region, ONIG_OPTION_NONE);
    if (found == ONIG_MISMATCH) break;
    if (found < 0) fail("tokenizer", "regex /{}/ search failed ({})", pattern_, found);
    auto start = static_cast<std::size_t>(guard.region->beg[0]);
    auto stop = static_cast<std::size_t>(guard.region->end[0]);
    if (start == stop && have_last_match && last_match_end == stop) {
      // No empty match right after the previous match: step one character on and retry.
      last_end += last_end < text.size() ? char_length(text, last_end) : 1;
      continue;
    }
    last_end = stop;
    have_last_match = true;
    last_match_end = stop;
    if (previous != start) spans.push_back({previous, start, false});
    spans.push_back({start, stop, true});
    previous = stop;
  }
  if (previous != text.size()) spans.push_back({previous, text.size(), false});
  return spans;
}

bool Regex::matches_at_start(std::string_view text) const {
  auto regex = static_cast<OnigRegex>(regex_);
  const UChar* begin = bytes_of(text);
  int length = onig_match(regex, begin, begin + text.size(), begin, nullptr, ONIG_OPTION_NONE);
  return length >= 0;
}

}  // namespace xlacel::tokenizer
