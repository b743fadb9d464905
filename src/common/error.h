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

// An Error about one field of an options struct: its message is "<field>: <problem>", and a
// caller that took the value from a flag (the CLI) can name the flag instead of the field.
class FieldError : public Error {
 public:
  FieldError(std::string_view field, const std::string& problem)
      : Error(fmt::format("{}: {}", field, problem)), field_(field), problem_(problem) {}
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string field_;
  std::string problem_;
};

// Throws Error("<where>: <formatted problem>").
template <typename... Args>
[[noreturn]] void fail(std::string_view where, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format("{}: {}", where, fmt::format(format, std::forward<Args>(args)...)));
}

// Throws FieldError(field, <formatted problem>).
template <typename... Args>
[[noreturn]] void fail_field(std::string_view field, fmt::format_string<Args...> format,
                             Args&&... args) {
  throw FieldError(field, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace xlacel
