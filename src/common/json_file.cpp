#include "common/json_file.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace xlacel {

Json parse_json_text(std::string_view text, std::string_view where) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    // nlohmann's message is "[json.exception.parse_error.101] parse error at line 1, ...";
    // out-of-range numbers raise other exception kinds, equally the file's fault.
    std::string what = e.what();
    auto start = what.find("] ");
    fail(where, "invalid JSON: {}", start == std::string::npos ? what : what.substr(start + 2));
  }
}

Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return parse_json_text(content.str(), path);
}

}  // namespace xlacel
