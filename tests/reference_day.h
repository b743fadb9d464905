#pragma once
// tests/data/chat/expected.json renders templates that print today's date unasked (gpt-oss's
// "Current date:", through strftime_now) on a fixed day, its case's "strftime_day"
// (tools/reference/chat_template.py); a test's rendering takes that day where it printed today's.
#include <chrono>
#include <ctime>
#include <string>

namespace xlacel::testing {

// Today as strftime_now("%Y-%m-%d") prints it.
inline std::string today() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&t, &local);
  char text[16];
  return std::string(text, std::strftime(text, sizeof text, "%Y-%m-%d", &local));
}

// `rendered` with today's date replaced by `day`.
inline std::string on_reference_day(std::string rendered, const std::string& day) {
  const std::string now = today();
  for (std::size_t at; (at = rendered.find(now)) != std::string::npos;) {
    rendered.replace(at, now.size(), day);
  }
  return rendered;
}

}  // namespace xlacel::testing
