#include "engine/stop_strings.h"

#include <algorithm>
#include <utility>

namespace xlacel::engine {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& stop) { return stop.empty(); });
}

std::string StopStrings::feed(std::string_view text) {
  if (stopped_) return "";
  held_ += text;
  std::size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const std::size_t at = held_.find(stop);
    if (at < first) {
      first = at;
      matched_ = stop;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string released = held_.substr(0, first);
    held_.clear();
    return released;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  std::size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (std::size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string released = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return released;
}

std::string StopStrings::flush() {
  return std::exchange(held_, std::string());
}

}  // namespace xlacel::engine
