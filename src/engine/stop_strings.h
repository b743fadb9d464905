#pragma once
// Stop strings over streamed text: text is released as soon as it cannot be the start of a
// stop string, and a stop string found ends the text right before it.
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::engine {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);

  // Adds `text`; returns what may be released now. Sets stopped() when a stop string appeared
  // (the text from it on is dropped).
  std::string feed(std::string_view text);
  // What is still held back (at the end of the stream, it is released).
  std::string flush();
  bool stopped() const { return stopped_; }
  // Once stopped(): the stop string found (the earliest in the text; of those starting there,
  // the first given).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace xlacel::engine
