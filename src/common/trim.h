#pragma once
// Text without its surrounding blanks, as line-oriented readers (/proc/cpuinfo, compiler
// messages) want it.
#include <string_view>

namespace xlacel {

// `text` without leading spaces and tabs, and without trailing spaces, tabs and carriage returns.
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace xlacel
