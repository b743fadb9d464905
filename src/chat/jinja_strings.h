#pragma once
// Python str operations on UTF-8 text (code-point based, like Python's str).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::jinja {

enum class StripSide { kBoth, kLeft, kRight };
// str.strip(chars); chars == nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);
// str.split(sep, maxsplit) / str.rsplit.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right = false);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       std::int64_t count);
std::int64_t py_count(std::string_view s, std::string_view sub);
// str.find in code points; -1 when absent.
std::int64_t py_find(std::string_view s, std::string_view sub, bool from_right);
bool py_islower(std::string_view s);
bool py_isupper(std::string_view s);

}  // namespace xlacel::jinja
