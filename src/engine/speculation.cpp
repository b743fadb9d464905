#include "engine/speculation.h"

#include <algorithm>

namespace xlacel::engine {

const char* speculation_name(Speculation speculation) {
  switch (speculation) {
    case Speculation::kOff:
      return "off";
    case Speculation::kNgram:
      return "ngram";
  }
  return "?";
}

std::optional<Speculation> parse_speculation(std::string_view name) {
  if (name == "off") return Speculation::kOff;
  if (name == "ngram" || name == "auto") return Speculation::kNgram;
  return std::nullopt;
}

int64_t accepted_drafts(std::span<const int32_t> draft, std::span<const int32_t> next) {
  const std::size_t checked = std::min(draft.size(), next.size());
  int64_t accepted = 0;
  while (static_cast<std::size_t>(accepted) < checked &&
         draft[static_cast<std::size_t>(accepted)] == next[static_cast<std::size_t>(accepted)]) {
    ++accepted;
  }
  return accepted;
}

bool DraftPacing::draft_now() {
  if (wait_ == 0) return true;
  --wait_;
  return false;
}

void DraftPacing::verified(int64_t drafted, int64_t accepted) {
  if (drafted == 0) return;
  if (accepted > 0) {
    backoff_ = 1;
    return;
  }
  wait_ = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxWait);
}

}  // namespace xlacel::engine
