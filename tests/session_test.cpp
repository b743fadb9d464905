// The session layer without a real runtime: Session's prefill chunking (bucket padding, the
// re-feed rule near the capacity, history, errors) and generate()'s loop (stop reasons, which
// graph each step asks for, timing) against a fake backend that records every call; the host
// sampler against transformers' logits processors (tests/data/session, from
// tools/reference/sampling.py) and a frequency check of its draws; and the two measurement
// helpers in common/ (memory bandwidth, resident set size).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/json_file.h"
#include "common/memory_bandwidth.h"
#include "common/process_stats.h"
#include "session/backend.h"
#include "session/generator.h"
#include "session/sampler.h"
#include "session/session.h"
#include "test_paths.h"

namespace xlacel::session {
namespace {

// The fake model's next token after `token` at `position`.
int32_t fake_next(int32_t token, int64_t position, int32_t vocab) {
  return static_cast<int32_t>((3 * int64_t{token} + 5 * position + 1) % vocab);
}

// A backend whose "model" predicts fake_next(last token, its position). Its logits fall off
// with the distance (mod vocab) above that token, so the argmax is fake_next and the order of
// the rest is known. It records every call, keeps the token written at each cache row (padding
// rows as kPadding) and checks what a real graph relies on: start + bucket <= capacity, and
// every row a step reads (positions before it) holding the sequence's real tokens.
class FakeBackend : public Backend {
 public:
  static constexpr int32_t kPadding = -2;
  static constexpr int32_t kNeverWritten = -1;

  struct PrefillCall {
    std::vector<int32_t> tokens;
    int32_t start = 0;
    int32_t valid = 0;
    bool want_logits = false;
  };
  struct DecodeCall {
    int32_t token = 0;
    int32_t position = 0;
    bool want_logits = false;
  };

  FakeBackend(int64_t capacity, int64_t bucket, int32_t vocab = 64) : vocab_(vocab) {
    capabilities_.backend = "fake";
    capabilities_.device = "test";
    capabilities_.capacity = capacity;
    capabilities_.prefill_bucket = bucket;
    capabilities_.argmax_on_device = true;
    capabilities_.logits = true;
    cache_.assign(capacity, kNeverWritten);
  }

  const Capabilities& capabilities() const override { return capabilities_; }
  const LoadReport& load_report() const override { return load_report_; }
  Capabilities& mutable_capabilities() { return capabilities_; }

  void prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start, int32_t valid,
                     bool want_logits, StepOutput& out) override {
    if (fail_on_prefill_call_ == static_cast<int>(prefills.size())) {
      throw std::runtime_error("fake backend failure");
    }
    prefills.push_back({{bucket_tokens.begin(), bucket_tokens.end()}, start, valid, want_logits});
    EXPECT_EQ(static_cast<int64_t>(bucket_tokens.size()), capabilities_.prefill_bucket);
    EXPECT_GE(valid, 1);
    EXPECT_LE(int64_t{start} + capabilities_.prefill_bucket, capabilities_.capacity);
    expect_rows_hold_real_tokens(start);
    for (int32_t i = 0; i < static_cast<int32_t>(bucket_tokens.size()); ++i) {
      cache_[start + i] = i < valid ? bucket_tokens[i] : kPadding;
    }
    std::this_thread::sleep_for(prefill_delay);
    answer(bucket_tokens[valid - 1], start + valid - 1, want_logits, out);
  }

  void decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) override {
    decodes.push_back({token, position, want_logits});
    EXPECT_LT(position, capabilities_.capacity);
    expect_rows_hold_real_tokens(position);
    cache_[position] = token;
    std::this_thread::sleep_for(decode_delay);
    answer(token, position, want_logits, out);
  }

  void fail_on_prefill_call(int index) { fail_on_prefill_call_ = index; }
  const std::vector<int32_t>& cache() const { return cache_; }

  std::vector<PrefillCall> prefills;
  std::vector<DecodeCall> decodes;
  std::chrono::microseconds prefill_delay{0};
  std::chrono::microseconds decode_delay{0};

 private:
  void expect_rows_hold_real_tokens(int32_t end) const {
    for (int32_t pos = 0; pos < end; ++pos) {
      EXPECT_GE(cache_[pos], 0) << "row " << pos << " is read before it holds a real token";
    }
  }

  void answer(int32_t token, int64_t position, bool want_logits, StepOutput& out) const {
    out.token = fake_next(token, position, vocab_);
    out.logits.clear();
    if (!want_logits) return;
    out.logits.resize(vocab_);
    for (int32_t i = 0; i < vocab_; ++i) {
      const int32_t distance = ((i - out.token) % vocab_ + vocab_) % vocab_;
      out.logits[i] = 3.0f - 0.01f * static_cast<float>(distance);
    }
  }

  int32_t vocab_;
  Capabilities capabilities_;
  LoadReport load_report_;
  std::vector<int32_t> cache_;
  int fail_on_prefill_call_ = -1;
};

std::vector<int32_t> iota_tokens(int32_t count, int32_t first = 1) {
  std::vector<int32_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<int32_t> padded(std::vector<int32_t> tokens, size_t bucket) {
  tokens.resize(bucket, 0);
  return tokens;
}

std::vector<int32_t> slice(const std::vector<int32_t>& tokens, size_t begin, size_t end) {
  return {tokens.begin() + static_cast<std::ptrdiff_t>(begin),
          tokens.begin() + static_cast<std::ptrdiff_t>(end)};
}

// Runs `body`, which must throw Error with exactly `message`.
template <typename Body>
void expect_error(const Body& body, const std::string& message) {
  try {
    body();
    ADD_FAILURE() << "no Error thrown, expected: " << message;
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

// ---------------------------------------------------------------------------------------------
// Session

TEST(SessionPrefill, ShortPromptIsOneChunkPaddedWithZeros) {
  FakeBackend backend(32, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = {11, 12, 13, 14, 15};
  StepOutput out;
  session.prefill(prompt, true, out);

  ASSERT_EQ(backend.prefills.size(), 1u);
  EXPECT_EQ(backend.prefills[0].tokens, padded(prompt, 8));
  EXPECT_EQ(backend.prefills[0].start, 0);
  EXPECT_EQ(backend.prefills[0].valid, 5);
  EXPECT_TRUE(backend.prefills[0].want_logits);
  EXPECT_EQ(out.token, fake_next(15, 4, 64));
  EXPECT_EQ(out.logits.size(), 64u);
  EXPECT_EQ(session.history(), prompt);
  EXPECT_EQ(session.position(), 5);
  EXPECT_EQ(session.remaining(), 27);
}

TEST(SessionPrefill, LongPromptRunsInBucketsAndOnlyTheLastAsksForLogits) {
  FakeBackend backend(64, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(20);
  StepOutput out;
  session.prefill(prompt, true, out);

  ASSERT_EQ(backend.prefills.size(), 3u);
  EXPECT_EQ(backend.prefills[0].tokens, slice(prompt, 0, 8));
  EXPECT_EQ(backend.prefills[1].tokens, slice(prompt, 8, 16));
  EXPECT_EQ(backend.prefills[2].tokens, padded(slice(prompt, 16, 20), 8));
  EXPECT_EQ(backend.prefills[0].start, 0);
  EXPECT_EQ(backend.prefills[1].start, 8);
  EXPECT_EQ(backend.prefills[2].start, 16);
  EXPECT_EQ(backend.prefills[0].valid, 8);
  EXPECT_EQ(backend.prefills[1].valid, 8);
  EXPECT_EQ(backend.prefills[2].valid, 4);
  EXPECT_FALSE(backend.prefills[0].want_logits);
  EXPECT_FALSE(backend.prefills[1].want_logits);
  EXPECT_TRUE(backend.prefills[2].want_logits);
  EXPECT_EQ(out.token, fake_next(20, 19, 64));
  EXPECT_EQ(session.history(), prompt);
}

TEST(SessionPrefill, WithoutLogitsNoChunkAsksForThem) {
  FakeBackend backend(64, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(12), false, out);
  ASSERT_EQ(backend.prefills.size(), 2u);
  EXPECT_FALSE(backend.prefills[0].want_logits);
  EXPECT_FALSE(backend.prefills[1].want_logits);
  EXPECT_TRUE(out.logits.empty());
}

TEST(SessionPrefill, ExactMultipleOfTheBucketHasNoEmptyChunk) {
  FakeBackend backend(64, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(16), true, out);
  ASSERT_EQ(backend.prefills.size(), 2u);
  EXPECT_EQ(backend.prefills[1].start, 8);
  EXPECT_EQ(backend.prefills[1].valid, 8);
}

TEST(SessionPrefill, AppendsAtTheCurrentPosition) {
  FakeBackend backend(64, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(5), false, out);
  session.decode_step(out.token, false, out);
  const std::vector<int32_t> second = iota_tokens(10, 40);
  session.prefill(second, true, out);

  ASSERT_EQ(backend.prefills.size(), 3u);
  EXPECT_EQ(backend.prefills[1].start, 6);
  EXPECT_EQ(backend.prefills[1].tokens, slice(second, 0, 8));
  EXPECT_EQ(backend.prefills[2].start, 14);
  EXPECT_EQ(backend.prefills[2].valid, 2);
  EXPECT_EQ(backend.prefills[2].tokens, padded(slice(second, 8, 10), 8));
  EXPECT_EQ(session.position(), 16);
  EXPECT_EQ(out.token, fake_next(49, 15, 64));
}

TEST(SessionPrefill, FinalChunkThatWouldOverrunReFeedsEarlierPromptTokens) {
  FakeBackend backend(30, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(27);
  StepOutput out;
  session.prefill(prompt, true, out);

  // 0, 8, 16, then 24 + 8 > 30: the last chunk starts at 27 - 8 = 19.
  ASSERT_EQ(backend.prefills.size(), 4u);
  EXPECT_EQ(backend.prefills[2].start, 16);
  EXPECT_EQ(backend.prefills[3].start, 19);
  EXPECT_EQ(backend.prefills[3].valid, 8);
  EXPECT_EQ(backend.prefills[3].tokens, slice(prompt, 19, 27));
  EXPECT_TRUE(backend.prefills[3].want_logits);
  EXPECT_EQ(out.token, fake_next(27, 26, 64));
  EXPECT_EQ(session.history(), prompt);
  EXPECT_EQ(slice(backend.cache(), 0, 27), prompt);
}

TEST(SessionPrefill, ReFeedReachesIntoTheHistoryOfEarlierCalls) {
  FakeBackend backend(20, 8);
  Session session(backend);
  const std::vector<int32_t> first = iota_tokens(15);
  const std::vector<int32_t> second = {50, 51, 52, 53};
  StepOutput out;
  session.prefill(first, false, out);
  session.prefill(second, true, out);

  // 15 + 8 > 20: start = 19 - 8 = 11, tokens 11..14 re-fed from the first prompt.
  ASSERT_EQ(backend.prefills.size(), 3u);
  const FakeBackend::PrefillCall& last = backend.prefills[2];
  EXPECT_EQ(last.start, 11);
  EXPECT_EQ(last.valid, 8);
  EXPECT_EQ(last.tokens, (std::vector<int32_t>{12, 13, 14, 15, 50, 51, 52, 53}));
  std::vector<int32_t> expected_history = first;
  expected_history.insert(expected_history.end(), second.begin(), second.end());
  EXPECT_EQ(session.history(), expected_history);
  EXPECT_EQ(out.token, fake_next(53, 18, 64));
}

TEST(SessionPrefill, ReFeedNeverStartsBeforePositionZero) {
  FakeBackend backend(10, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(5), false, out);
  session.prefill(std::vector<int32_t>{60, 61, 62}, true, out);

  // 5 + 8 > 10: start = max(0, 8 - 8) = 0 with 8 valid tokens.
  ASSERT_EQ(backend.prefills.size(), 2u);
  EXPECT_EQ(backend.prefills[1].start, 0);
  EXPECT_EQ(backend.prefills[1].valid, 8);
  EXPECT_EQ(backend.prefills[1].tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 60, 61, 62}));
}

TEST(SessionPrefill, PromptFillingTheWholeCapacityFits) {
  FakeBackend backend(24, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(24), true, out);
  EXPECT_EQ(backend.prefills.size(), 3u);
  EXPECT_EQ(session.remaining(), 0);
}

TEST(SessionPrefill, EmptyPromptIsAnError) {
  FakeBackend backend(32, 8);
  Session session(backend);
  StepOutput out;
  expect_error([&] { session.prefill({}, true, out); },
               "session: empty prompt: prefill needs at least one token");
  EXPECT_TRUE(backend.prefills.empty());
}

TEST(SessionPrefill, PromptThatDoesNotFitFailsBeforeRunningAnything) {
  FakeBackend backend(30, 8);
  Session session(backend);
  StepOutput out;
  expect_error([&] { session.prefill(iota_tokens(31), true, out); },
               "session: prompt of 31 tokens does not fit: 30 of capacity 30 positions left");
  EXPECT_TRUE(backend.prefills.empty());
  EXPECT_EQ(session.position(), 0);

  session.prefill(iota_tokens(20), false, out);
  const size_t calls = backend.prefills.size();
  expect_error([&] { session.prefill(iota_tokens(11), true, out); },
               "session: prompt of 11 tokens does not fit: 10 of capacity 30 positions left");
  EXPECT_EQ(backend.prefills.size(), calls);
  EXPECT_EQ(session.position(), 20);
}

TEST(SessionPrefill, HistoryHoldsOnlyTheChunksThatRan) {
  FakeBackend backend(64, 8);
  backend.fail_on_prefill_call(1);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(20);
  StepOutput out;
  EXPECT_THROW(session.prefill(prompt, true, out), std::runtime_error);
  EXPECT_EQ(session.history(), slice(prompt, 0, 8));
}

TEST(SessionDecode, StepsFollowThePositionUntilTheCacheIsFull) {
  FakeBackend backend(12, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(10), false, out);
  session.decode_step(41, true, out);
  EXPECT_EQ(out.token, fake_next(41, 10, 64));
  EXPECT_EQ(out.logits.size(), 64u);
  session.decode_step(42, false, out);
  ASSERT_EQ(backend.decodes.size(), 2u);
  EXPECT_EQ(backend.decodes[0].position, 10);
  EXPECT_TRUE(backend.decodes[0].want_logits);
  EXPECT_EQ(backend.decodes[1].position, 11);
  EXPECT_FALSE(backend.decodes[1].want_logits);
  EXPECT_EQ(session.history().back(), 42);
  EXPECT_EQ(session.remaining(), 0);

  expect_error([&] { session.decode_step(43, false, out); },
               "session: context full: 12 of 12 positions used");
  EXPECT_EQ(backend.decodes.size(), 2u);
  EXPECT_EQ(session.position(), 12);
}

TEST(SessionDecode, ResetStartsAgainAtPositionZero) {
  FakeBackend backend(32, 8);
  Session session(backend);
  StepOutput out;
  session.prefill(iota_tokens(6), false, out);
  session.reset();
  EXPECT_EQ(session.position(), 0);
  EXPECT_TRUE(session.history().empty());
  session.prefill(std::vector<int32_t>{9, 8, 7}, false, out);
  EXPECT_EQ(backend.prefills.back().start, 0);
  EXPECT_EQ(session.history(), (std::vector<int32_t>{9, 8, 7}));
}

// ---------------------------------------------------------------------------------------------
// generate()

// What greedy decoding of the fake model gives: each token from the one before it.
std::vector<int32_t> fake_greedy(const std::vector<int32_t>& prompt, int64_t count,
                                 int32_t vocab = 64) {
  std::vector<int32_t> tokens;
  int32_t last = prompt.back();
  int64_t position = static_cast<int64_t>(prompt.size()) - 1;
  for (int64_t i = 0; i < count; ++i) {
    last = fake_next(last, position++, vocab);
    tokens.push_back(last);
  }
  return tokens;
}

TEST(Generate, GreedyUsesTheDeviceArgmaxAndStopsAtTheTokenBudget) {
  FakeBackend backend(64, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(11);
  GenerateOptions options;
  options.max_new_tokens = 6;
  std::vector<int32_t> streamed;
  GenerateResult result = generate(session, prompt, options, [&](int32_t token) {
    streamed.push_back(token);
    return true;
  });

  EXPECT_EQ(result.output_ids, fake_greedy(prompt, 6));
  EXPECT_EQ(streamed, result.output_ids);
  EXPECT_EQ(result.stop, StopReason::kLength);
  EXPECT_EQ(std::string(stop_reason_name(result.stop)), "length");
  EXPECT_TRUE(result.stop_message.empty());
  EXPECT_EQ(result.prompt_tokens, 11);
  // No decode step after the last token: 6 tokens, 5 steps.
  ASSERT_EQ(backend.decodes.size(), 5u);
  EXPECT_EQ(result.decode_steps, 5);
  for (size_t i = 0; i < backend.decodes.size(); ++i) {
    EXPECT_EQ(backend.decodes[i].token, result.output_ids[i]);
    EXPECT_EQ(backend.decodes[i].position, static_cast<int32_t>(11 + i));
    EXPECT_FALSE(backend.decodes[i].want_logits);
  }
  for (const auto& call : backend.prefills) EXPECT_FALSE(call.want_logits);
  EXPECT_EQ(session.position(), 16);
}

TEST(Generate, EosEndsGenerationAndStaysInTheOutput) {
  FakeBackend backend(64, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = {7, 3, 5};
  const std::vector<int32_t> expected = fake_greedy(prompt, 3);
  GenerateOptions options;
  options.max_new_tokens = 50;
  options.eos_ids = {63, expected[2]};
  ASSERT_EQ(std::count(expected.begin(), expected.begin() + 2, expected[2]), 0);
  int calls = 0;
  GenerateResult result = generate(session, prompt, options, [&](int32_t) {
    ++calls;
    return true;
  });
  EXPECT_EQ(result.output_ids, expected);
  EXPECT_EQ(result.stop, StopReason::kEos);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(result.decode_steps, 2);
}

TEST(Generate, CallbackReturningFalseStops) {
  FakeBackend backend(64, 8);
  Session session(backend);
  GenerateOptions options;
  options.max_new_tokens = 50;
  int calls = 0;
  GenerateResult result =
      generate(session, iota_tokens(4), options, [&](int32_t) { return ++calls < 2; });
  EXPECT_EQ(result.output_ids.size(), 2u);
  EXPECT_EQ(result.stop, StopReason::kCallback);
  EXPECT_EQ(std::string(stop_reason_name(result.stop)), "callback");
  EXPECT_EQ(backend.decodes.size(), 1u);
}

TEST(Generate, FullCacheStopsWithAMessage) {
  FakeBackend backend(16, 8);
  Session session(backend);
  GenerateOptions options;
  options.max_new_tokens = 100;
  GenerateResult result = generate(session, iota_tokens(10), options, nullptr);

  // 10 prompt rows + 6 decoded tokens fill the 16 rows; the 7th token is known but not fed.
  EXPECT_EQ(result.output_ids, fake_greedy(iota_tokens(10), 7));
  EXPECT_EQ(result.stop, StopReason::kCapacity);
  EXPECT_EQ(std::string(stop_reason_name(result.stop)), "capacity");
  EXPECT_EQ(result.stop_message, "context full: 16 of 16 positions used; raise --context");
  EXPECT_EQ(backend.decodes.size(), 6u);
  EXPECT_EQ(backend.decodes.back().position, 15);
}

TEST(Generate, PromptFillingTheCacheStillYieldsOneToken) {
  FakeBackend backend(16, 8);
  Session session(backend);
  GenerateOptions options;
  GenerateResult result = generate(session, iota_tokens(16), options, nullptr);
  EXPECT_EQ(result.output_ids.size(), 1u);
  EXPECT_EQ(result.stop, StopReason::kCapacity);
  EXPECT_TRUE(backend.decodes.empty());
}

TEST(Generate, PromptThatDoesNotFitPropagatesTheSessionError) {
  FakeBackend backend(16, 8);
  Session session(backend);
  GenerateOptions options;
  expect_error([&] { generate(session, iota_tokens(17), options, nullptr); },
               "session: prompt of 17 tokens does not fit: 16 of capacity 16 positions left");
  EXPECT_TRUE(backend.prefills.empty());
}

TEST(Generate, InvalidOptionsFailBeforeRunning) {
  FakeBackend backend(16, 8);
  Session session(backend);
  GenerateOptions options;
  options.max_new_tokens = 0;
  expect_error([&] { generate(session, iota_tokens(3), options, nullptr); },
               "generate: the number of new tokens must be at least 1, got 0");
  options.max_new_tokens = 4;
  options.sampling.temperature = 0.8f;
  options.sampling.top_p = 1.5f;
  expect_error([&] { generate(session, iota_tokens(3), options, nullptr); },
               "--top-p must be in (0, 1], got 1.5");
  options.sampling.top_p = 0.9f;
  backend.mutable_capabilities().logits = false;
  expect_error([&] { generate(session, iota_tokens(3), options, nullptr); },
               "generate: sampling needs the decode-logits graph, which the backend has not "
               "loaded");
  EXPECT_TRUE(backend.prefills.empty());
}

TEST(Generate, SamplingAsksForLogitsAndTopKOneMatchesGreedy) {
  FakeBackend backend(64, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(9);
  GenerateOptions options;
  options.max_new_tokens = 8;
  options.sampling.temperature = 0.7f;
  options.sampling.top_k = 1;
  options.sampling.seed = 1234;
  GenerateResult result = generate(session, prompt, options, nullptr);
  EXPECT_EQ(result.output_ids, fake_greedy(prompt, 8));
  EXPECT_TRUE(backend.prefills.back().want_logits);
  for (const auto& call : backend.decodes) EXPECT_TRUE(call.want_logits);
}

TEST(Generate, GreedyWithoutTheDecodeGraphUsesTheLogitsArgmax) {
  FakeBackend backend(64, 8);
  backend.mutable_capabilities().argmax_on_device = false;
  Session session(backend);
  GenerateOptions options;
  options.max_new_tokens = 4;
  GenerateResult result = generate(session, iota_tokens(5), options, nullptr);
  EXPECT_EQ(result.output_ids, fake_greedy(iota_tokens(5), 4));
  for (const auto& call : backend.decodes) EXPECT_TRUE(call.want_logits);
}

TEST(Generate, RepetitionPenaltySeesPromptAndOutputs) {
  // The fake's logits fall off above the predicted token, so with a strong penalty greedy
  // picks the first token at or above it not seen yet: nothing repeats.
  FakeBackend backend(128, 8);
  Session session(backend);
  const std::vector<int32_t> prompt = iota_tokens(10, 0);
  GenerateOptions options;
  options.max_new_tokens = 30;
  options.sampling.repeat_penalty = 2.0f;
  options.sampling.repeat_last_n = 0;
  ASSERT_TRUE(options.sampling.needs_logits());
  GenerateResult result = generate(session, prompt, options, nullptr);

  std::set<int32_t> seen(prompt.begin(), prompt.end());
  for (int32_t token : result.output_ids) EXPECT_TRUE(seen.insert(token).second) << token;
  EXPECT_TRUE(backend.prefills.back().want_logits);
  for (const auto& call : backend.decodes) EXPECT_TRUE(call.want_logits);
  // Without the penalty the fake model repeats itself.
  FakeBackend plain_backend(128, 8);
  Session plain(plain_backend);
  options.sampling.repeat_penalty = 1;
  GenerateResult repeated = generate(plain, prompt, options, nullptr);
  std::set<int32_t> distinct(repeated.output_ids.begin(), repeated.output_ids.end());
  distinct.insert(prompt.begin(), prompt.end());
  EXPECT_LT(distinct.size(), prompt.size() + repeated.output_ids.size());
}

TEST(Generate, TimingSeparatesPrefillFromDecode) {
  FakeBackend backend(64, 8);
  backend.prefill_delay = std::chrono::milliseconds(20);
  backend.decode_delay = std::chrono::milliseconds(2);
  Session session(backend);
  GenerateOptions options;
  options.max_new_tokens = 5;
  GenerateResult result = generate(session, iota_tokens(12), options, nullptr);

  EXPECT_EQ(backend.prefills.size(), 2u);
  EXPECT_GE(result.prefill_seconds, 0.040);
  EXPECT_EQ(result.decode_steps, 4);
  EXPECT_GE(result.decode_seconds, 0.008);
  EXPECT_LT(result.decode_seconds, result.prefill_seconds);
  EXPECT_NEAR(result.prompt_tokens_per_second(), 12 / result.prefill_seconds, 1e-9);
  EXPECT_NEAR(result.generation_tokens_per_second(), 4 / result.decode_seconds, 1e-9);

  GenerateResult empty;
  EXPECT_EQ(empty.prompt_tokens_per_second(), 0);
  EXPECT_EQ(empty.generation_tokens_per_second(), 0);
}

// ---------------------------------------------------------------------------------------------
// Sampler

TEST(SamplingOptions, ValidateNamesTheOption) {
  auto message = [](auto change) {
    SamplingOptions options;
    change(options);
    return options.validate();
  };
  EXPECT_EQ(message([](SamplingOptions&) {}), "");
  EXPECT_EQ(message([](SamplingOptions& o) { o.temperature = -1; }), "");  // greedy
  EXPECT_EQ(message([](SamplingOptions& o) { o.top_p = 1.5f; }),
            "--top-p must be in (0, 1], got 1.5");
  EXPECT_EQ(message([](SamplingOptions& o) { o.top_p = 0; }), "--top-p must be in (0, 1], got 0");
  EXPECT_EQ(message([](SamplingOptions& o) { o.top_k = -1; }),
            "--top-k must be >= 0 (0: off), got -1");
  EXPECT_EQ(message([](SamplingOptions& o) { o.min_p = 2; }), "--min-p must be in [0, 1], got 2");
  EXPECT_EQ(message([](SamplingOptions& o) { o.repeat_penalty = 0; }),
            "--repeat-penalty must be > 0 (1: off), got 0");
  EXPECT_EQ(message([](SamplingOptions& o) { o.repeat_last_n = -3; }),
            "--repeat-last-n must be >= 0 (0: all tokens), got -3");
  EXPECT_EQ(message([](SamplingOptions& o) { o.temperature = std::nanf(""); }),
            "--temp must be a finite number (<= 0: greedy), got nan");

  SamplingOptions bad;
  bad.min_p = -0.5f;
  expect_error([&] { Sampler sampler(bad); }, "--min-p must be in [0, 1], got -0.5");
}

TEST(SamplingOptions, OnlyPlainGreedyKeepsTheArgmaxOnTheDevice) {
  SamplingOptions options;
  EXPECT_TRUE(options.greedy());
  EXPECT_FALSE(options.needs_logits());
  options.repeat_penalty = 1.1f;
  EXPECT_TRUE(options.needs_logits());
  options = {};
  options.temperature = 0.5f;
  EXPECT_TRUE(options.needs_logits());
}

TEST(Sampler, GreedyTiesGoToTheLowerId) {
  SamplingOptions options;
  options.top_k = 3;  // ignored when greedy
  Sampler sampler(options);
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  EXPECT_EQ(sampler.sample(logits, {}), 1);
  std::vector<float> with_nan = {std::nanf(""), -3.0f, -3.0f};
  EXPECT_EQ(sampler.sample(with_nan, {}), 1);
}

// Deterministic logits without ties.
std::vector<float> pseudo_random_logits(size_t size, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<float> logits(size);
  for (float& logit : logits) {
    logit = static_cast<float>(static_cast<double>(engine() >> 11) * 0x1.0p-53 * 12.0 - 6.0);
  }
  return logits;
}

std::vector<int32_t> draws(const SamplingOptions& options, const std::vector<float>& logits,
                           int count) {
  Sampler sampler(options);
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i) {
    std::vector<float> scratch = logits;
    tokens.push_back(sampler.sample(scratch, {}));
  }
  return tokens;
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferent) {
  const std::vector<float> logits(100, 0.0f);
  SamplingOptions options;
  options.temperature = 1.0f;
  options.seed = 42;
  const std::vector<int32_t> first = draws(options, logits, 64);
  EXPECT_EQ(draws(options, logits, 64), first);
  options.seed = 43;
  EXPECT_NE(draws(options, logits, 64), first);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingOptions options;
  options.temperature = 1.3f;
  options.top_k = 1;
  Sampler sampler(options);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = pseudo_random_logits(1000, seed);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.sample(logits, {}), best);
  }
}

// Reads a logits vector of a reference case: listed, or rebuilt from its hash rule.
std::vector<float> reference_logits(const Json& reference_case) {
  std::vector<float> logits;
  if (reference_case.contains("hashed_logits")) {
    const Json& spec = reference_case["hashed_logits"];
    const auto size = spec["size"].get<uint64_t>();
    const auto scale = spec["scale"].get<double>();
    const auto offset = spec["offset"].get<double>();
    for (uint64_t i = 0; i < size; ++i) {
      const uint64_t hashed = (i * 2654435761u) % (uint64_t{1} << 32);
      logits.push_back(
          static_cast<float>(static_cast<double>(hashed) / 4294967296.0 * scale + offset));
    }
    return logits;
  }
  for (const Json& value : reference_case["logits"]) {
    logits.push_back(value.is_string() ? -std::numeric_limits<float>::infinity()
                                       : static_cast<float>(value.get<double>()));
  }
  return logits;
}

SamplingOptions reference_options(const Json& json) {
  SamplingOptions options;
  options.temperature = static_cast<float>(json["temperature"].get<double>());
  options.top_k = json["top_k"].get<int64_t>();
  options.top_p = static_cast<float>(json["top_p"].get<double>());
  options.min_p = static_cast<float>(json["min_p"].get<double>());
  options.repeat_penalty = static_cast<float>(json["repeat_penalty"].get<double>());
  options.repeat_last_n = json["repeat_last_n"].get<int64_t>();
  return options;
}

TEST(Sampler, KeepsWhatTransformersWarpersKeepWithTheSameProbabilities) {
  const Json reference =
      read_json_file(testing::test_data("session/sampling_reference.json").string());
  ASSERT_GE(reference["cases"].size(), 20u);
  for (const Json& reference_case : reference["cases"]) {
    const std::string name = reference_case["name"].get<std::string>();
    SCOPED_TRACE(name);
    const SamplingOptions options = reference_options(reference_case["options"]);
    const std::vector<int32_t> context = reference_case["context"].get<std::vector<int32_t>>();
    std::vector<float> logits = reference_logits(reference_case);
    Sampler sampler(options);
    if (reference_case.contains("greedy")) {
      EXPECT_EQ(sampler.sample(logits, context), reference_case["greedy"].get<int32_t>());
      continue;
    }
    std::vector<TokenProbability> kept = sampler.distribution(logits, context);
    std::sort(kept.begin(), kept.end(),
              [](const TokenProbability& a, const TokenProbability& b) { return a.id < b.id; });
    std::vector<int32_t> kept_ids;
    for (const TokenProbability& token : kept) kept_ids.push_back(token.id);
    ASSERT_EQ(kept_ids, reference_case["kept"].get<std::vector<int32_t>>());
    const auto probabilities = reference_case["probabilities"].get<std::vector<double>>();
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_NEAR(kept[i].probability, probabilities[i], 1e-6) << "token " << kept[i].id;
    }
  }
}

TEST(Sampler, DrawFrequenciesMatchTheDistribution) {
  const std::vector<double> expected = {0.1, 0.2, 0.3, 0.4};
  std::vector<float> logits;
  for (double p : expected) logits.push_back(static_cast<float>(std::log(p)));
  SamplingOptions options;
  options.temperature = 1.0f;
  options.seed = 7;
  constexpr int kDraws = 20000;
  std::vector<int> counts(expected.size());
  for (int32_t token : draws(options, logits, kDraws)) ++counts.at(token);
  for (size_t i = 0; i < expected.size(); ++i) {
    const double frequency = counts[i] / static_cast<double>(kDraws);
    const double standard_error = std::sqrt(expected[i] * (1 - expected[i]) / kDraws);
    EXPECT_NEAR(frequency, expected[i], 4.5 * standard_error) << "token " << i;
  }

  // Top-k 2 renormalizes over the two kept tokens: 3/7 and 4/7.
  options.top_k = 2;
  counts.assign(expected.size(), 0);
  for (int32_t token : draws(options, logits, kDraws)) ++counts.at(token);
  EXPECT_EQ(counts[0] + counts[1], 0);
  const double share = counts[2] / static_cast<double>(kDraws);
  EXPECT_NEAR(share, 3.0 / 7.0, 4.5 * std::sqrt(3.0 / 7.0 * 4.0 / 7.0 / kDraws));
}

TEST(Sampler, PenaltyWindowCoversOnlyTheLastTokens) {
  SamplingOptions options;
  options.temperature = 1.0f;
  options.repeat_penalty = 2.0f;
  options.repeat_last_n = 2;
  Sampler sampler(options);
  std::vector<float> logits = {2.0f, 2.0f, -2.0f, 2.0f};
  const std::vector<int32_t> context = {0, 1, 2, 2};
  sampler.distribution(logits, context);
  // Only token 2 is in the last two (penalized once although it occurs twice).
  EXPECT_EQ(logits, (std::vector<float>{2.0f, 2.0f, -4.0f, 2.0f}));
}

TEST(Sampler, FastOnAFullVocabulary) {
  const std::vector<float> logits = pseudo_random_logits(49152, 99);
  SamplingOptions options;
  options.temperature = 0.8f;
  options.top_k = 40;
  options.top_p = 0.95f;
  options.min_p = 0.05f;
  options.repeat_penalty = 1.1f;
  const std::vector<int32_t> context = iota_tokens(64, 1000);
  for (int64_t top_k : {int64_t{40}, int64_t{0}}) {
    options.top_k = top_k;
    Sampler sampler(options);
    std::vector<float> scratch;
    constexpr int kCalls = 50;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      scratch = logits;
      sampler.sample(scratch, context);
    }
    const double per_call =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kCalls;
    std::printf("sample() over 49152 logits, top_k %ld: %.3f ms\n", static_cast<long>(top_k),
                per_call * 1e3);
    EXPECT_LT(per_call, 0.02);  // generous: decode steps take milliseconds
  }
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers

TEST(MemoryBandwidth, PlausibleAndQuick) {
  const auto start = std::chrono::steady_clock::now();
  const double bytes_per_second = measure_read_bandwidth();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("read bandwidth: %.1f GB/s in %.2f s\n", bytes_per_second / 1e9, seconds);
  EXPECT_GT(bytes_per_second, 0.5e9);
  EXPECT_LT(bytes_per_second, 1e13);
  // About a second on real hardware; first-touching the buffer in a small VM whose memory the
  // host has reclaimed can take a few seconds more.
  EXPECT_LT(seconds, 10.0);

  EXPECT_GT(measure_read_bandwidth(1, 64 << 20), 0.5e9);
}

TEST(ProcessStats, PeakIsAtLeastTheCurrentResidentSet) {
  std::vector<char> touched(32 << 20, 1);  // make sure something is resident
  ASSERT_EQ(touched[12345], 1);
  const uint64_t current = current_rss_bytes();
  const uint64_t peak = peak_rss_bytes();
  EXPECT_GT(current, touched.size());
  EXPECT_GE(peak, current);
}

}  // namespace
}  // namespace xlacel::session
