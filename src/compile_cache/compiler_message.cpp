#include "compile_cache/compiler_message.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/trim.h"

namespace xlacel::compile_cache {

namespace {

constexpr std::size_t kMaxLineLength = 300;

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

std::string summarize_compiler_output(std::string_view output, std::string_view input_path,
                                      std::string_view source, std::size_t max_lines) {
  std::string text = replace_all(std::string(output), input_path, source);
  std::vector<std::string_view> lines;
  std::vector<std::string_view> errors;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t end = rest.find('\n');
    std::string_view line = trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty()) continue;
    lines.push_back(line);
    if (line.find("error:") != std::string_view::npos) errors.push_back(line);
  }
  const std::vector<std::string_view>& chosen = errors.empty() ? lines : errors;
  if (chosen.empty()) return "(no output)";
  std::string summary;
  std::size_t shown = std::min(chosen.size(), max_lines);
  for (std::size_t i = 0; i < shown; ++i) {
    std::string_view line = chosen[i];
    if (!summary.empty()) summary += " | ";
    if (line.size() > kMaxLineLength) {
      summary += line.substr(0, kMaxLineLength);
      summary += "...";
    } else {
      summary += line;
    }
  }
  if (chosen.size() > shown) {
    summary +=
        fmt::format(" (+{} more {})", chosen.size() - shown, errors.empty() ? "lines" : "errors");
  }
  return summary;
}

}  // namespace xlacel::compile_cache
