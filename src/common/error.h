#pragma once
// One error type for everything the user can cause: its message is a single line that names the
// file (or input) and the problem, ready to print as-is before exiting non-zero.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace xlacel {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error("<where>: <formatted problem>").
template <typename... Args>
[[noreturn]] void fail(std::string_view where, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format("{}: {}", where, fmt::format(format, std::forward<Args>(args)...)));
}

}  // namespace xlacel
