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

double AcceptanceEstimate::odds() const {
  return (stood_ + kPriorStood) / (stood_ + missed_ + kPriorStood + kPriorMissed);
}

double AcceptanceEstimate::expected(int64_t drafted) const {
  const double p = odds();
  double run = 1, total = 0;
  for (int64_t i = 0; i < drafted; ++i) total += run *= p;
  return total;
}

void AcceptanceEstimate::decoded() {
  stood_ *= kFade;
  missed_ *= kFade;
}

void AcceptanceEstimate::verified(int64_t drafted, int64_t accepted) {
  decoded();
  stood_ += static_cast<double>(accepted);
  if (accepted < drafted) missed_ += 1;
}

void StepCosts::add(std::vector<Cost>& costs, int64_t index, double seconds) {
  if (index < 0) return;
  const auto i = static_cast<std::size_t>(index);
  if (costs.size() <= i) costs.resize(i + 1);
  Cost& cost = costs[i];
  if (++cost.calls == 1) return;
  if (cost.seconds > 0 && seconds > 3 * cost.seconds && ++cost.slow < 3) return;
  cost.slow = 0;
  // A quarter of each new time: steps vary, and a slow one (a busy machine) fades.
  cost.seconds = cost.seconds == 0 ? seconds : 0.75 * cost.seconds + 0.25 * seconds;
}

double StepCosts::seconds_of(const std::vector<Cost>& costs, int64_t index) {
  return index >= 0 && static_cast<std::size_t>(index) < costs.size()
             ? costs[static_cast<std::size_t>(index)].seconds
             : 0;
}

void StepCosts::decode_took(int64_t rows, double seconds) {
  add(decode_, rows, seconds);
  ++decodes_since_verify_;
}

void StepCosts::verify_took(int64_t sequences, double seconds) {
  add(verify_, sequences, seconds);
  decodes_since_verify_ = 0;
}

double StepCosts::decode(int64_t rows) const {
  return seconds_of(decode_, rows);
}

double StepCosts::verify(int64_t sequences) const {
  return seconds_of(verify_, sequences);
}

bool StepCosts::verify_pays(int64_t sequences, double tokens, int64_t rows) const {
  const double verify_seconds = verify(sequences), decode_seconds = decode(rows);
  if (verify_seconds == 0 || decodes_since_verify_ >= kRetryAfter) return true;
  if (decode_seconds == 0) return false;
  return tokens / verify_seconds > static_cast<double>(sequences) / decode_seconds;
}

}  // namespace xlacel::engine
