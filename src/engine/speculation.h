#pragma once
// Speculative decoding's policy, apart from the scheduler that runs it: which drafter guesses
// tokens, how many of a verify call's guesses stand, and when a sequence stops guessing for a
// while. Greedy speculation is exact by construction: a drafted token is kept only where it is
// the argmax the model gives after the tokens before it, which is the token decode would give.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace xlacel::engine {

enum class Speculation {
  kOff,
  kNgram,  // prompt lookup (engine/ngram_draft.h): no second model
};
const char* speculation_name(Speculation speculation);  // "off", "ngram"
// "off", "ngram", and "auto" (what is on by default: n-gram; a draft model where one is given).
std::optional<Speculation> parse_speculation(std::string_view name);

// How many leading drafted tokens stand: draft[i] stands while it equals next[i], the argmax
// after the tokens before it (next has one entry more than the draft: the token after the last
// one kept comes from it too).
int64_t accepted_drafts(std::span<const int32_t> draft, std::span<const int32_t> next);

// When a sequence drafts: after a verify that kept none of its guesses it waits a step, then
// twice as long after each further miss (up to kMaxWait), so text that does not repeat itself
// costs few verify calls; a kept guess resets the wait. A verify call costs more than a decode
// step (its rows), which only kept guesses repay.
class DraftPacing {
 public:
  static constexpr int64_t kMaxWait = 16;
  // Whether to draft this step (counts a waiting step down).
  bool draft_now();
  void verified(int64_t drafted, int64_t accepted);

 private:
  int64_t wait_ = 0;     // steps left before the next draft
  int64_t backoff_ = 1;  // the wait after the next miss
};

}  // namespace xlacel::engine
