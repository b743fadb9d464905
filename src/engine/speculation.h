#pragma once
// Speculative decoding's policy, apart from the scheduler that runs it: which drafter guesses
// tokens, how many of a verify call's guesses stand, and when a sequence stops guessing for a
// while. Greedy speculation is exact by construction: a drafted token is kept only where it is
// the argmax the model gives after the tokens before it, which is the token decode would give.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

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

// What a sequence's drafts are worth: how likely each drafted token is to stand, from the ones
// that stood and the verify calls that ended at one that did not (the estimate of a geometric
// run's odds), both fading by kFade per step, so that text which stopped repeating itself stops
// drafting and old evidence gives way to the prior (which tries again).
class AcceptanceEstimate {
 public:
  static constexpr double kFade = 0.9;
  static constexpr double kPriorStood = 2, kPriorMissed = 1;
  // The chance a drafted token stands, given that those before it did.
  double odds() const;
  // Drafted tokens expected to stand out of `drafted`: p + p^2 + ... + p^drafted.
  double expected(int64_t drafted) const;
  // A step passed: a decode step (nothing verified), or a verify call.
  void decoded();
  void verified(int64_t drafted, int64_t accepted);

 private:
  double stood_ = 0, missed_ = 0;
};

// Seconds a decode step over `rows` and a verify call over `sequences` took lately (a moving
// average of each, without the first call of each and calls over 3 times the average unless 3
// come in a row: a graph's first call, as a longer attention window's, pays one-time costs; 0
// until measured),
// so that a verify call runs only where the tokens it is expected to give come faster than
// decode steps would give them: a verify call costs its whole bucket of rows, on a CPU several
// decode steps of a small model. A verify call is tried again after kRetryAfter decode steps, so
// that one slow call (a busy machine) does not end speculation for good.
class StepCosts {
 public:
  static constexpr int64_t kRetryAfter = 64;
  void decode_took(int64_t rows, double seconds);
  void verify_took(int64_t sequences, double seconds);
  double decode(int64_t rows) const;
  double verify(int64_t sequences) const;
  // Whether a verify call over `sequences` expected to give `tokens` beats decode steps of
  // `rows` giving one token per sequence; calls not measured yet, or not lately, are tried.
  bool verify_pays(int64_t sequences, double tokens, int64_t rows) const;

 private:
  struct Cost {
    int64_t calls = 0;
    double seconds = 0;
    int64_t slow = 0;  // calls over 3 times the average in a row
  };
  static void add(std::vector<Cost>& costs, int64_t index, double seconds);
  static double seconds_of(const std::vector<Cost>& costs, int64_t index);
  std::vector<Cost> decode_, verify_;  // by rows, by sequences
  int64_t decodes_since_verify_ = 0;
};

}  // namespace xlacel::engine
