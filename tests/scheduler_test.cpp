// The engine's scheduler without a real runtime: the prefill chunk rule (bucket padding, chunks
// from the first uncached position), continuous batching (slots freed at once and refilled,
// ragged decode rows, long prompts interleaved with decode steps), stop conditions, refusal,
// cancellation, per-request seeded sampling, grammars (a mask on their own rows), stop strings,
// prefix reuse (slot choice, where prefill starts, the resident rows left intact, what
// sliding-window rings allow) and the SchedulerThread that steps it for a server, against a fake
// model runner that records every call and checks what a real graph relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/error.h"
#include "engine/ngram_draft.h"
#include "engine/prefill_plan.h"
#include "engine/prefix_reuse.h"
#include "engine/scheduler.h"
#include "engine/scheduler_thread.h"
#include "engine/speculation.h"
#include "engine/stop_strings.h"
#include "executor/model_runner.h"
#include "expect_error.h"
#include "grammar/grammar_compiler.h"
#include "model_files/gguf_file.h"
#include "models/test_support.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::engine {
namespace {

using executor::Capabilities;
using executor::DecodeOutput;
using executor::PrefillOutput;
using testing::expect_error;

// The fake model's next token after `token` at `position` (the same in every slot).
int32_t fake_next(int32_t token, int64_t position, int32_t vocab) {
  return static_cast<int32_t>((3 * int64_t{token} + 5 * position + 1) % vocab);
}

// A runner whose "model" predicts fake_next(last token, its position). Its logits fall off with
// the distance (mod vocab) above that token, so the argmax is fake_next. It keeps the token
// written at each cache row of each slot and checks that every row a step reads (positions
// before it, in its own slot) holds the sequence's real token, that chunks stay inside the
// capacity, and that decode batches have a compiled size (powers of two). With `ring_rows`, it
// also keeps a sliding layer's ring (position p at row p mod ring_rows, real tokens only for a
// prefill) and checks that the window each step reads is still there.
class FakeRunner : public executor::ModelRunner {
 public:
  static constexpr int32_t kPadding = -2;
  static constexpr int32_t kNeverWritten = -1;

  struct PrefillCall {
    int32_t slot = 0;
    std::vector<int32_t> tokens;
    int32_t start = 0;
    int32_t valid = 0;
    bool want_logits = false;
    std::vector<int32_t> context;  // the slot's rows [0, start) when the chunk ran
  };
  struct DecodeCall {
    std::vector<int32_t> tokens;
    std::vector<int32_t> positions;
    bool want_logits = false;
  };
  // Every call in order: 'p' prefill, 'd' decode, 'c' copy_slot, 's' save_slot, 'r'
  // restore_slot, 'v' verify.
  std::string calls;
  // The next call throws (after writing nothing), as a failing graph call would.
  bool fail_next_call = false;

  FakeRunner(int64_t slots, int64_t capacity, int64_t bucket, int32_t vocab = 64,
             int64_t ring_rows = 0)
      : vocab_(vocab) {
    capabilities_.runtime = "fake";
    capabilities_.device = "test";
    capabilities_.slots = slots;
    capabilities_.capacity = capacity;
    capabilities_.prefill_bucket = bucket;
    capabilities_.prefill_buckets = {bucket};
    capabilities_.vocab_size = vocab;
    capabilities_.ring_rows = ring_rows;
    cache_.assign(static_cast<std::size_t>(slots),
                  std::vector<int32_t>(static_cast<std::size_t>(capacity), kNeverWritten));
    ring_.assign(static_cast<std::size_t>(slots),
                 std::vector<int64_t>(static_cast<std::size_t>(ring_rows), kNeverWritten));
  }

  const Capabilities& capabilities() const override { return capabilities_; }
  // Compiled prefill buckets, ascending, the last the chunk size (Capabilities).
  void set_prefill_buckets(std::vector<int64_t> buckets) {
    capabilities_.prefill_buckets = std::move(buckets);
  }
  // Chunks of the smallest bucket one call takes (Capabilities::prefill_sequences).
  void set_prefill_sequences(int64_t sequences) { capabilities_.prefill_sequences = sequences; }
  // A verify graph of `tokens` per sequence over up to `sequences` (speculative decoding).
  void set_verify(int64_t tokens, int64_t sequences) {
    capabilities_.verify_tokens = tokens;
    capabilities_.verify_sequences = sequences;
  }

  // Each chunk's rows as a prefill writes them (a ring's too), and the argmax after each.
  void verify(std::span<const executor::PrefillInput> chunks,
              std::span<std::vector<int32_t>> next) override {
    calls += 'v';
    throw_if_asked();
    EXPECT_LE(static_cast<int64_t>(chunks.size()), capabilities_.verify_sequences);
    std::vector<int32_t> slots;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const executor::PrefillInput& chunk = chunks[i];
      EXPECT_EQ(std::count(slots.begin(), slots.end(), chunk.slot), 0) << "slot " << chunk.slot;
      slots.push_back(chunk.slot);
      EXPECT_EQ(static_cast<int64_t>(chunk.bucket_tokens.size()), capabilities_.verify_tokens);
      EXPECT_GE(chunk.valid, 1);
      EXPECT_LE(int64_t{chunk.start} + chunk.valid, capabilities_.capacity);
      auto& rows = cache_[static_cast<std::size_t>(chunk.slot)];
      expect_rows_hold_real_tokens(rows, chunk.start, chunk.slot);
      expect_ring_holds_window(chunk.slot, chunk.start);
      next[i].clear();
      for (int32_t j = 0; j < chunk.valid; ++j) {
        rows[static_cast<std::size_t>(chunk.start + j)] = chunk.bucket_tokens[j];
        write_ring(chunk.slot, chunk.start + j);
        next[i].push_back(fake_next(chunk.bucket_tokens[j], chunk.start + j, vocab_));
      }
      verified_tokens += chunk.valid;
      verify_end = std::max(verify_end, int64_t{chunk.start} + chunk.valid);
    }
  }
  int64_t verified_tokens = 0;  // valid tokens of every verify call
  int64_t verify_end = 0;       // the furthest any verify chunk reached

  // Records the slots of each call and checks what a graph over several sequences needs; each
  // chunk then runs as prefill_chunk runs it (a real graph's rows do not depend on each other).
  void prefill_chunks(std::span<const executor::PrefillInput> chunks, bool want_logits,
                      std::span<PrefillOutput> outs) override {
    std::vector<int32_t> slots;
    for (const executor::PrefillInput& chunk : chunks) {
      EXPECT_EQ(std::count(slots.begin(), slots.end(), chunk.slot), 0) << "slot " << chunk.slot;
      slots.push_back(chunk.slot);
      if (chunks.size() > 1) {
        EXPECT_EQ(static_cast<int64_t>(chunk.bucket_tokens.size()),
                  capabilities_.prefill_buckets.front());
      }
    }
    EXPECT_LE(static_cast<int64_t>(chunks.size()), capabilities_.prefill_sequences);
    prefill_calls.push_back(slots);
    ModelRunner::prefill_chunks(chunks, want_logits, outs);
  }

  int64_t decode_rows(int64_t rows) const override {
    int64_t bucket = 1;
    while (bucket < rows) bucket *= 2;
    return std::min(bucket, capabilities_.slots);
  }

  void prefill_chunk(int32_t slot, std::span<const int32_t> bucket_tokens, int32_t start,
                     int32_t valid, bool want_logits, PrefillOutput& out) override {
    calls += 'p';
    throw_if_asked();
    auto& rows = cache_[static_cast<std::size_t>(slot)];
    prefills.push_back({slot,
                        {bucket_tokens.begin(), bucket_tokens.end()},
                        start,
                        valid,
                        want_logits,
                        {rows.begin(), rows.begin() + std::max(0, start)}});
    const auto& buckets = capabilities_.prefill_buckets;
    EXPECT_NE(std::find(buckets.begin(), buckets.end(), static_cast<int64_t>(bucket_tokens.size())),
              buckets.end());
    EXPECT_GE(valid, 1);
    EXPECT_LE(int64_t{start} + valid, capabilities_.capacity);
    expect_rows_hold_real_tokens(rows, start, slot);
    expect_ring_holds_window(slot, start);
    for (int32_t i = 0; i < static_cast<int32_t>(bucket_tokens.size()); ++i) {
      // Padding rows past the capacity are left out.
      if (start + i >= capabilities_.capacity) break;
      rows[static_cast<std::size_t>(start + i)] = i < valid ? bucket_tokens[i] : kPadding;
      if (i < valid) write_ring(slot, start + i);
    }
    out.token = fake_next(bucket_tokens[valid - 1], start + valid - 1, vocab_);
    out.logits.clear();
    if (want_logits) append_logits(out.token, out.logits);
  }

  void decode(std::span<const int32_t> tokens, std::span<const int32_t> positions, bool want_logits,
              DecodeOutput& out) override {
    calls += 'd';
    throw_if_asked();
    decodes.push_back(
        {{tokens.begin(), tokens.end()}, {positions.begin(), positions.end()}, want_logits});
    EXPECT_EQ(decode_rows(static_cast<int64_t>(tokens.size())),
              static_cast<int64_t>(tokens.size()));
    out.tokens.clear();
    out.logits.clear();
    for (std::size_t b = 0; b < tokens.size(); ++b) {
      auto& rows = cache_[b];
      EXPECT_LT(positions[b], capabilities_.capacity);
      expect_rows_hold_real_tokens(rows, positions[b], static_cast<int32_t>(b));
      expect_ring_holds_window(static_cast<int32_t>(b), positions[b]);
      rows[static_cast<std::size_t>(positions[b])] = tokens[b];
      write_ring(static_cast<int32_t>(b), positions[b]);
      const int32_t next = fake_next(tokens[b], positions[b], vocab_);
      out.tokens.push_back(next);
      if (want_logits) append_logits(next, out.logits);
    }
  }

  void copy_slot(int32_t from, int32_t to) override {
    calls += 'c';
    throw_if_asked();
    EXPECT_NE(from, to);
    copies.emplace_back(from, to);
    cache_[static_cast<std::size_t>(to)] = cache_[static_cast<std::size_t>(from)];
    ring_[static_cast<std::size_t>(to)] = ring_[static_cast<std::size_t>(from)];
  }

  // A slot's rows as the real runner gives them: one byte string per cache (here the token
  // rows and the ring's positions).
  executor::SlotRows save_slot(int32_t slot, int64_t) override {
    calls += 's';
    throw_if_asked();
    const auto& rows = cache_[static_cast<std::size_t>(slot)];
    const auto& ring = ring_[static_cast<std::size_t>(slot)];
    const auto bytes = [](const auto& values) {
      const auto* begin = reinterpret_cast<const std::byte*>(values.data());
      return std::vector<std::byte>(begin, begin + values.size() * sizeof(values[0]));
    };
    return {0, {bytes(rows), bytes(ring)}};
  }

  void restore_slot(int32_t slot, const executor::SlotRows& saved) override {
    calls += 'r';
    throw_if_asked();
    auto& rows = cache_[static_cast<std::size_t>(slot)];
    auto& ring = ring_[static_cast<std::size_t>(slot)];
    ASSERT_EQ(saved.caches.size(), 2u);
    ASSERT_EQ(saved.caches[0].size(), rows.size() * sizeof(rows[0]));
    ASSERT_EQ(saved.caches[1].size(), ring.size() * sizeof(ring[0]));
    std::memcpy(rows.data(), saved.caches[0].data(), saved.caches[0].size());
    std::memcpy(ring.data(), saved.caches[1].data(), saved.caches[1].size());
  }

  const std::vector<int32_t>& cache(int32_t slot) const {
    return cache_[static_cast<std::size_t>(slot)];
  }

  std::vector<PrefillCall> prefills;                // one per chunk
  std::vector<std::vector<int32_t>> prefill_calls;  // the slots of each prefill_chunks call
  std::vector<DecodeCall> decodes;
  std::vector<std::pair<int32_t, int32_t>> copies;  // from, to

 private:
  void throw_if_asked() {
    if (fail_next_call) {
      fail_next_call = false;
      throw Error("fake: graph call failed");
    }
  }

  void expect_rows_hold_real_tokens(const std::vector<int32_t>& rows, int32_t end,
                                    int32_t slot) const {
    for (int32_t pos = 0; pos < end; ++pos) {
      EXPECT_GE(rows[static_cast<std::size_t>(pos)], 0)
          << "slot " << slot << " row " << pos << " is read before it holds a real token";
    }
  }

  // A query at `position` reads the window's older positions from the ring.
  void expect_ring_holds_window(int32_t slot, int64_t position) const {
    const int64_t rows = capabilities_.ring_rows;
    const auto& ring = ring_[static_cast<std::size_t>(slot)];
    for (int64_t q = std::max<int64_t>(0, position - rows + 1); q < position; ++q) {
      EXPECT_EQ(ring[static_cast<std::size_t>(q % rows)], q)
          << "slot " << slot << ": the ring lost position " << q << " before a read at "
          << position;
    }
  }

  void write_ring(int32_t slot, int64_t position) {
    const int64_t rows = capabilities_.ring_rows;
    if (rows > 0)
      ring_[static_cast<std::size_t>(slot)][static_cast<std::size_t>(position % rows)] = position;
  }

  void append_logits(int32_t best, std::vector<float>& logits) const {
    for (int32_t i = 0; i < vocab_; ++i) {
      const int32_t distance = ((i - best) % vocab_ + vocab_) % vocab_;
      logits.push_back(3.0f - 0.01f * static_cast<float>(distance));
    }
  }

  int32_t vocab_;
  Capabilities capabilities_;
  std::vector<std::vector<int32_t>> cache_;
  std::vector<std::vector<int64_t>> ring_;  // [slots][ring_rows]: the position each row holds
};

std::vector<int32_t> iota_tokens(int32_t count, int32_t first = 1) {
  std::vector<int32_t> tokens(static_cast<std::size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// What greedy decoding of the fake model gives for `prompt`: each token from the one before it.
std::vector<int32_t> fake_greedy(const std::vector<int32_t>& prompt, int64_t count,
                                 int32_t vocab = 64) {
  std::vector<int32_t> out;
  int32_t token = prompt.back();
  auto position = static_cast<int64_t>(prompt.size()) - 1;
  for (int64_t i = 0; i < count; ++i) {
    token = fake_next(token, position++, vocab);
    out.push_back(token);
  }
  return out;
}

// One request's events, collected.
struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  int events = 0;
  bool finished = false;
  FinishReason reason = FinishReason::kLength;
  std::string message;
  RequestStats stats;

  EventCallback callback() {
    return [this](const TokenEvent& event) {
      ++events;
      EXPECT_FALSE(finished) << "event after the last one";
      if (event.token >= 0) tokens.push_back(event.token);
      text += event.text;
      if (event.finished) {
        finished = true;
        reason = event.reason;
        message = event.message;
        stats = event.stats;
      }
    };
  }
};

// For the tests of prefill calls on one-token prompts and prompts whose last token alone is left
// after prefix reuse: that token runs in a prefill call, not the decode step.
SchedulerOptions every_prompt_token_prefilled() {
  SchedulerOptions options;
  options.last_prompt_token_in_decode = false;
  return options;
}

RequestOptions greedy(int64_t max_tokens) {
  RequestOptions options;
  options.max_tokens = max_tokens;
  return options;
}

// ---------------------------------------------------------------------------------------------
// The prefill chunk rule

TEST(PrefillPlan, ChunksOfTheBucketThenTheRest) {
  PrefillChunk c = next_prefill_chunk(0, 20, 8);
  EXPECT_EQ(c.start, 0);
  EXPECT_EQ(c.valid, 8);
  EXPECT_EQ(c.chunk_end, 8);
  c = next_prefill_chunk(16, 20, 8);
  EXPECT_EQ(c.start, 16);
  EXPECT_EQ(c.valid, 4);
  EXPECT_EQ(c.chunk_end, 20);
}

TEST(PrefillPlan, APromptShorterThanTheBucketIsOneChunk) {
  PrefillChunk c = next_prefill_chunk(0, 5, 8);
  EXPECT_EQ(c.start, 0);
  EXPECT_EQ(c.valid, 5);
  EXPECT_EQ(c.chunk_end, 5);
}

TEST(PrefillPlan, AChunkRunsInTheSmallestBucketThatHoldsIt) {
  const std::vector<int64_t> buckets = {4, 16};
  EXPECT_EQ(prefill_bucket_for(1, buckets), 4);
  EXPECT_EQ(prefill_bucket_for(4, buckets), 4);
  EXPECT_EQ(prefill_bucket_for(5, buckets), 16);
  EXPECT_EQ(prefill_bucket_for(16, buckets), 16);
}

// A 10-token prompt runs as a chunk of 8 and the last 2 tokens in the small bucket of 4; a
// follow-up turn that reuses it prefills its 2 new tokens in that bucket too. The tokens are the
// same as with one bucket.
TEST(Scheduler, ShortChunksRunInTheSmallBucket) {
  FakeRunner runner(1, 64, 8);
  runner.set_prefill_buckets({4, 8});
  Scheduler scheduler(runner, nullptr);
  Collected first, second;
  scheduler.submit(iota_tokens(10), greedy(3), first.callback());
  scheduler.run_until_idle();
  std::vector<int32_t> follow_up = iota_tokens(10);
  follow_up.insert(follow_up.end(), first.tokens.begin(), first.tokens.end() - 1);
  follow_up.push_back(40);
  follow_up.push_back(41);
  scheduler.submit(follow_up, greedy(3), second.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefills.size(), 3u);
  EXPECT_EQ(runner.prefills[0].tokens.size(), 8u);
  EXPECT_EQ(runner.prefills[1].tokens.size(), 4u);
  EXPECT_EQ(runner.prefills[1].tokens, (std::vector<int32_t>{9, 10, 0, 0}));
  EXPECT_EQ(runner.prefills[2].tokens.size(), 4u);
  EXPECT_EQ(runner.prefills[2].valid, 2);
  EXPECT_EQ(first.tokens, fake_greedy(iota_tokens(10), 3));
  EXPECT_EQ(second.tokens, fake_greedy(follow_up, 3));
}

// Short prompts waiting together prefill in one call, oldest first, at most prefill_sequences
// to a call; each gets the tokens it gets alone.
TEST(Scheduler, ShortPromptsPrefillTogether) {
  FakeRunner runner(4, 64, 8);
  runner.set_prefill_buckets({4, 8});
  runner.set_prefill_sequences(2);
  Scheduler scheduler(runner, nullptr);
  const std::vector<std::vector<int32_t>> prompts = {
      {5, 6, 7}, {9, 8}, {11, 12, 13, 14}, {20, 21, 22}};
  std::vector<Collected> got(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    scheduler.submit(prompts[i], greedy(3), got[i].callback());
  }
  scheduler.step();
  EXPECT_EQ(scheduler.last_step().prefill_sequences, 2);
  EXPECT_EQ(scheduler.last_step().prefill_tokens, 5);
  scheduler.run_until_idle();
  ASSERT_GE(runner.prefill_calls.size(), 2u);
  EXPECT_EQ(runner.prefill_calls[0], (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(runner.prefill_calls[1], (std::vector<int32_t>{2, 3}));
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, fake_greedy(prompts[i], 3)) << "request " << i;
  }
}

// While several prompts prefill, each call takes a small-bucket chunk of each (oldest first),
// so the short ones finish first; a prompt prefilling alone takes full chunks.
TEST(Scheduler, ABurstPrefillsInSmallChunksTogetherAndALonePromptInFullOnes) {
  FakeRunner runner(4, 64, 8);
  runner.set_prefill_buckets({4, 8});
  runner.set_prefill_sequences(4);
  Scheduler scheduler(runner, nullptr);
  const std::vector<std::vector<int32_t>> prompts = {
      iota_tokens(7), {9, 8}, iota_tokens(6, 30), {3, 4, 5}};
  std::vector<Collected> got(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    scheduler.submit(prompts[i], greedy(2), got[i].callback());
  }
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefill_calls.size(), 2u);
  EXPECT_EQ(runner.prefill_calls[0], (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(runner.prefill_calls[1], (std::vector<int32_t>{0, 2}));  // the rest of the long ones
  for (const auto& chunk : runner.prefills) EXPECT_EQ(chunk.tokens.size(), 4u);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, fake_greedy(prompts[i], 2)) << "request " << i;
  }
  Collected alone;
  scheduler.submit(iota_tokens(20, 40), greedy(2), alone.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefills.size(), 9u);
  EXPECT_EQ(runner.prefills[6].tokens.size(), 8u);
  EXPECT_EQ(runner.prefills[7].tokens.size(), 8u);
  EXPECT_EQ(runner.prefills[8].tokens.size(), 4u);
  EXPECT_EQ(alone.tokens, fake_greedy(iota_tokens(20, 40), 2));
}

// Two long prompts would fill half a call in small chunks: the oldest takes full chunks until a
// small chunk finishes it, then the two go together, and the other finishes in full chunks.
TEST(Scheduler, AFewLongPromptsTakeFullChunksInTurn) {
  FakeRunner runner(4, 64, 8);
  runner.set_prefill_buckets({4, 8});
  runner.set_prefill_sequences(4);
  Scheduler scheduler(runner, nullptr);
  const std::vector<std::vector<int32_t>> prompts = {iota_tokens(20), iota_tokens(18, 40)};
  std::vector<Collected> got(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    scheduler.submit(prompts[i], greedy(2), got[i].callback());
  }
  scheduler.run_until_idle();
  using Calls = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(runner.prefill_calls, (Calls{{0}, {0}, {0, 1}, {1}, {1}}));
  std::vector<std::size_t> sizes;
  for (const auto& chunk : runner.prefills) sizes.push_back(chunk.tokens.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{8, 8, 4, 4, 8, 8}));
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, fake_greedy(prompts[i], 2)) << "request " << i;
  }
}

// One-token prompts need no prefill call: the first decode step feeds each prompt's token and
// gives each its first output, the tokens they get through a prefill.
TEST(Scheduler, OneTokenPromptsGetTheirFirstTokensFromOneDecodeStep) {
  FakeRunner runner(4, 64, 8);
  Scheduler scheduler(runner, nullptr);
  std::vector<Collected> got(3);
  for (int32_t i = 0; i < 3; ++i) scheduler.submit({10 + i}, greedy(4), got[i].callback());
  scheduler.step();
  EXPECT_TRUE(runner.prefills.empty());
  ASSERT_EQ(runner.decodes.size(), 1u);
  EXPECT_EQ(runner.decodes[0].tokens, (std::vector<int32_t>{10, 11, 12, 0}));
  EXPECT_EQ(runner.decodes[0].positions, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(scheduler.last_step().decode_sequences, 3);
  scheduler.run_until_idle();
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].tokens, fake_greedy({10 + i}, 4)) << "request " << i;
    EXPECT_EQ(got[i].stats.output_tokens, 4);
  }
}

// ---------------------------------------------------------------------------------------------
// One sequence

TEST(Scheduler, ShortPromptIsOneChunkPaddedWithZerosThenGreedyDecode) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  Collected c;
  scheduler.submit({5, 6, 7}, greedy(4), c.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefills.size(), 1u);
  EXPECT_EQ(runner.prefills[0].tokens, (std::vector<int32_t>{5, 6, 7, 0, 0, 0, 0, 0}));
  EXPECT_EQ(runner.prefills[0].valid, 3);
  EXPECT_FALSE(runner.prefills[0].want_logits);
  EXPECT_EQ(c.tokens, fake_greedy({5, 6, 7}, 4));
  EXPECT_TRUE(c.finished);
  EXPECT_EQ(c.reason, FinishReason::kLength);
  EXPECT_EQ(runner.decodes.size(), 3u);  // the first token comes from the prefill
  EXPECT_EQ(c.stats.prompt_tokens, 3);
  EXPECT_EQ(c.stats.output_tokens, 4);
  EXPECT_EQ(c.stats.decode_steps, 3);
  EXPECT_TRUE(scheduler.idle());
}

TEST(Scheduler, LongPromptRunsInBucketsAndOnlyTheLastAsksForLogits) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  Collected c;
  RequestOptions options = greedy(2);
  options.sampling.temperature = 0.7f;  // needs logits
  scheduler.submit(iota_tokens(20), options, c.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefills.size(), 3u);
  EXPECT_EQ(runner.prefills[2].start, 16);
  EXPECT_EQ(runner.prefills[2].valid, 4);
  EXPECT_FALSE(runner.prefills[0].want_logits);
  EXPECT_FALSE(runner.prefills[1].want_logits);
  EXPECT_TRUE(runner.prefills[2].want_logits);
  EXPECT_EQ(c.tokens.size(), 2u);
}

TEST(Scheduler, EosEndsTheRequestAndStaysInTheOutput) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> expected = fake_greedy({9}, 10);
  RequestOptions options = greedy(10);
  options.eos_ids = {expected[3]};
  Collected c;
  scheduler.submit({9}, options, c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.tokens, std::vector<int32_t>(expected.begin(), expected.begin() + 4));
  EXPECT_EQ(c.reason, FinishReason::kEos);
}

TEST(Scheduler, FullContextStopsWithAMessage) {
  FakeRunner runner(1, 16, 8);
  Scheduler scheduler(runner, nullptr);
  Collected c;
  scheduler.submit(iota_tokens(10), greedy(100), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.tokens.size(), 7u);  // positions 10..15 fed back, the 7th token needs row 16
  EXPECT_EQ(c.reason, FinishReason::kCapacity);
  EXPECT_EQ(c.message, "context full: 16 of 16 positions used");
}

TEST(Scheduler, PromptFillingTheContextStillYieldsOneToken) {
  FakeRunner runner(1, 16, 8);
  Scheduler scheduler(runner, nullptr);
  Collected c;
  scheduler.submit(iota_tokens(16), greedy(5), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.tokens.size(), 1u);
  EXPECT_EQ(c.reason, FinishReason::kCapacity);
}

TEST(Scheduler, RefusesWhatCannotRunBeforeQueueingIt) {
  FakeRunner runner(2, 16, 8);
  Scheduler scheduler(runner, nullptr);
  Collected ok;
  scheduler.submit({1, 2}, greedy(3), ok.callback());
  expect_error([&] { scheduler.submit(iota_tokens(17), greedy(3), nullptr); },
               "prompt: 17 tokens do not fit the context of 16 positions");
  expect_error([&] { scheduler.submit({}, greedy(3), nullptr); },
               "prompt: is empty: a request needs at least one token");
  expect_error([&] { scheduler.submit({64}, greedy(3), nullptr); },
               "prompt: token id 64 is outside the vocabulary [0, 64)");
  expect_error([&] { scheduler.submit({1}, greedy(0), nullptr); },
               "max_tokens: must be at least 1, got 0");
  RequestOptions bad = greedy(3);
  bad.sampling.top_p = 2;
  expect_error([&] { scheduler.submit({1}, bad, nullptr); }, "top_p must be in (0, 1], got 2");
  RequestOptions stop = greedy(3);
  stop.stop = {"x"};
  expect_error([&] { scheduler.submit({1}, stop, nullptr); },
               "stop: stop strings need a tokenizer");
  EXPECT_EQ(scheduler.waiting(), 1u);
  scheduler.run_until_idle();
  EXPECT_EQ(ok.tokens, fake_greedy({1, 2}, 3));  // unaffected
}

// ---------------------------------------------------------------------------------------------
// Continuous batching

TEST(Scheduler, EveryStreamEqualsItsSingleRunWhileRequestsJoinAndLeave) {
  FakeRunner runner(4, 64, 4);
  Scheduler scheduler(runner, nullptr);
  struct Job {
    std::vector<int32_t> prompt;
    int64_t max_tokens;
    Collected collected;
  };
  std::vector<Job> jobs = {{iota_tokens(3, 1), 9, {}},   {iota_tokens(11, 7), 4, {}},
                           {iota_tokens(6, 20), 12, {}}, {iota_tokens(1, 40), 2, {}},
                           {iota_tokens(9, 3), 7, {}},   {iota_tokens(2, 50), 5, {}},
                           {iota_tokens(14, 2), 3, {}}};
  // Three at first, the rest while the others run.
  for (std::size_t i = 0; i < 3; ++i) {
    scheduler.submit(jobs[i].prompt, greedy(jobs[i].max_tokens), jobs[i].collected.callback());
  }
  for (int i = 0; i < 3; ++i) scheduler.step();
  for (std::size_t i = 3; i < jobs.size(); ++i) {
    scheduler.submit(jobs[i].prompt, greedy(jobs[i].max_tokens), jobs[i].collected.callback());
    scheduler.step();
  }
  scheduler.run_until_idle();
  for (const Job& job : jobs) {
    EXPECT_TRUE(job.collected.finished);
    EXPECT_EQ(job.collected.tokens, fake_greedy(job.prompt, job.max_tokens));
  }
  // Batches really formed: some decode steps advanced several sequences at once.
  std::size_t widest = 0;
  for (const auto& call : runner.decodes) widest = std::max(widest, call.tokens.size());
  EXPECT_EQ(widest, 4u);
}

TEST(Scheduler, AFinishedSequenceFreesItsSlotForTheNextStep) {
  FakeRunner runner(2, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  Collected a, b, c;
  scheduler.submit({1}, greedy(2), a.callback());
  scheduler.submit({2}, greedy(50), b.callback());
  scheduler.submit({3}, greedy(2), c.callback());
  EXPECT_EQ(scheduler.waiting(), 3u);
  scheduler.step();                    // admits a (slot 0) and b (slot 1); prefills a; decodes a
  EXPECT_EQ(scheduler.running(), 1u);  // a finished after its second token and left at once
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(scheduler.waiting(), 1u);
  scheduler.step();  // c takes slot 0 and is prefilled (b goes first: admitted earlier)
  EXPECT_EQ(runner.prefills.back().slot, 1);
  scheduler.step();
  EXPECT_EQ(runner.prefills.back().slot, 0);
  EXPECT_EQ(runner.prefills.back().tokens[0], 3);
  scheduler.run_until_idle();
  EXPECT_EQ(c.tokens, fake_greedy({3}, 2));
  EXPECT_EQ(b.tokens, fake_greedy({2}, 50));
}

TEST(Scheduler, LongPromptsAreInterleavedWithDecodeSteps) {
  FakeRunner runner(2, 128, 4);
  Scheduler scheduler(runner, nullptr);
  Collected running, longer;
  scheduler.submit({1, 2}, greedy(30), running.callback());
  scheduler.step();  // prefilled, one decode step
  scheduler.submit(iota_tokens(40), greedy(3), longer.callback());
  runner.calls.clear();
  for (int i = 0; i < 10; ++i) scheduler.step();
  // Ten chunks of the long prompt, each followed by a decode step of the running stream.
  EXPECT_EQ(runner.calls, "pdpdpdpdpdpdpdpdpdpd");
  scheduler.run_until_idle();
  EXPECT_EQ(running.tokens, fake_greedy({1, 2}, 30));
  EXPECT_EQ(longer.tokens, fake_greedy(iota_tokens(40), 3));
}

TEST(Scheduler, DecodeRowsCoverTheHighestBusySlotRoundedToACompiledSize) {
  FakeRunner runner(8, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  std::vector<Collected> c(3);
  for (int i = 0; i < 3; ++i) scheduler.submit({i + 1}, greedy(6), c[i].callback());
  scheduler.run_until_idle();
  std::set<std::size_t> sizes;
  for (const auto& call : runner.decodes) sizes.insert(call.tokens.size());
  EXPECT_EQ(sizes, (std::set<std::size_t>{1, 2, 4}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c[i].tokens, fake_greedy({i + 1}, 6));
}

TEST(Scheduler, CancelEndsARunningOrWaitingRequestAndFreesItsSlot) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  Collected a, b, c;
  const uint64_t first = scheduler.submit({1}, greedy(100), a.callback());
  const uint64_t second = scheduler.submit({2}, greedy(100), b.callback());
  scheduler.submit({3}, greedy(3), c.callback());
  scheduler.step();
  scheduler.step();
  scheduler.cancel(second);  // waiting
  scheduler.cancel(first);   // running
  scheduler.step();
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(a.reason, FinishReason::kCancelled);
  EXPECT_EQ(a.tokens, fake_greedy({1}, 3));
  EXPECT_TRUE(b.finished);
  EXPECT_EQ(b.reason, FinishReason::kCancelled);
  EXPECT_TRUE(b.tokens.empty());
  EXPECT_EQ(runner.prefills.back().tokens[0], 3);  // c took the freed slot in the same step
  scheduler.run_until_idle();
  EXPECT_EQ(c.tokens, fake_greedy({3}, 3));
  scheduler.cancel(first);  // finished already: ignored
  scheduler.cancel(12345);  // unknown: ignored
  EXPECT_FALSE(scheduler.step());
}

TEST(Scheduler, SeededSamplingGivesTheSameTokensWhateverElseIsInTheBatch) {
  RequestOptions sampled = greedy(20);
  sampled.sampling.temperature = 1.0f;
  sampled.sampling.seed = 7;
  auto run = [&](int companions) {
    FakeRunner runner(4, 64, 8);
    Scheduler scheduler(runner, nullptr);
    std::vector<Collected> others(static_cast<std::size_t>(companions));
    for (int i = 0; i < companions; ++i) {
      RequestOptions other = greedy(15 + i);
      other.sampling.temperature = 0.8f;
      other.sampling.seed = static_cast<uint64_t>(100 + i);
      scheduler.submit({i + 10}, other, others[static_cast<std::size_t>(i)].callback());
    }
    Collected c;
    scheduler.submit({5, 6}, sampled, c.callback());
    scheduler.run_until_idle();
    return c.tokens;
  };
  const std::vector<int32_t> alone = run(0);
  EXPECT_EQ(alone.size(), 20u);
  EXPECT_EQ(run(1), alone);
  EXPECT_EQ(run(3), alone);
}

TEST(Scheduler, LogprobsAndPenaltiesUseTheLogitsAndLeaveGreedyRowsOnTheDevicePath) {
  FakeRunner runner(4, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  // Plain greedy alone: never any logits read back.
  Collected plain;
  scheduler.submit({5, 6}, greedy(6), plain.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(plain.tokens, fake_greedy({5, 6}, 6));
  for (const auto& call : runner.prefills) EXPECT_FALSE(call.want_logits);
  for (const auto& call : runner.decodes) EXPECT_FALSE(call.want_logits);

  // Greedy with logprobs: the same tokens, each the top entry of its own logprobs.
  RequestOptions with_logprobs = greedy(6);
  with_logprobs.sampling.logprobs = true;
  with_logprobs.sampling.top_logprobs = 3;
  std::vector<TokenLogprobs> logprobs;
  Collected reported;
  EventCallback collect = reported.callback();
  scheduler.submit({5, 6}, with_logprobs, [&](const TokenEvent& event) {
    if (event.token >= 0) {
      EXPECT_TRUE(event.logprobs.has_value());
      if (event.logprobs) logprobs.push_back(*event.logprobs);
    }
    collect(event);
  });
  // A penalized request in the same batch changes only its own tokens.
  RequestOptions penalized = greedy(6);
  penalized.sampling.presence_penalty = 2.0f;  // above the fake logits' 0.01 steps
  penalized.sampling.logit_bias = {{plain.tokens[0], -100.0f}};
  Collected changed;
  Collected plain_again;
  scheduler.submit({5, 6}, penalized, changed.callback());
  scheduler.submit({5, 6}, greedy(6), plain_again.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(reported.tokens, plain.tokens);
  EXPECT_EQ(plain_again.tokens, plain.tokens);
  EXPECT_NE(changed.tokens, plain.tokens);
  ASSERT_EQ(logprobs.size(), reported.tokens.size());
  for (std::size_t i = 0; i < logprobs.size(); ++i) {
    EXPECT_EQ(logprobs[i].chosen.id, reported.tokens[i]);
    ASSERT_EQ(logprobs[i].top.size(), 3u);
    EXPECT_EQ(logprobs[i].top[0].id, reported.tokens[i]);
    EXPECT_EQ(logprobs[i].top[0].logprob, logprobs[i].chosen.logprob);
  }
  // Rows that need logits make their steps read them back; once only the plain request is left
  // (admitted last, it finishes last), its steps go back to the device argmax.
  EXPECT_TRUE(std::any_of(runner.decodes.begin(), runner.decodes.end(),
                          [](const FakeRunner::DecodeCall& call) { return call.want_logits; }));
  EXPECT_FALSE(runner.decodes.back().want_logits);
}

TEST(Scheduler, AGrammarMasksOnlyItsOwnRowAndAllowsEosWhereItIsComplete) {
  GgufFile gguf(testing::test_data("tokenizer/tiny_llama_bpe.gguf").string());
  const auto tokenizer = Tokenizer::from_gguf(gguf);
  const auto vocab = static_cast<int32_t>(tokenizer->vocab_size());
  const int32_t eos = *tokenizer->eos_token_id();
  grammar::GrammarCompiler compiler(*tokenizer, vocab, {eos});
  FakeRunner runner(4, 64, 8, vocab);
  Scheduler scheduler(runner, tokenizer.get());
  Collected alone;
  scheduler.submit({5, 6}, greedy(12), alone.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(alone.tokens, fake_greedy({5, 6}, 12, vocab));

  // A constrained greedy request batched with a free one: the free one keeps its tokens (from
  // the same logits read back for both rows), the constrained one spells a value of the schema
  // and then the end of the sequence, the only token the complete grammar allows.
  RequestOptions constrained = greedy(40);
  constrained.eos_ids = {eos};
  constrained.grammar = compiler.json_schema(R"({"enum": ["yes", "no"]})", "schema");
  Collected json, beside;
  const std::size_t first_batched_decode = runner.decodes.size();
  scheduler.submit({5, 6}, constrained, json.callback());
  scheduler.submit({5, 6}, greedy(12), beside.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(beside.tokens, alone.tokens);
  EXPECT_EQ(json.reason, FinishReason::kEos);
  EXPECT_EQ(json.tokens.back(), eos);
  EXPECT_TRUE(json.text == R"("yes")" || json.text == R"("no")") << json.text;
  // Its steps read the logits back (the free row takes its argmax from them).
  EXPECT_TRUE(runner.decodes.at(first_batched_decode).want_logits);

  // Without end-of-sequence ids the request ends where the grammar is complete.
  constrained.eos_ids.clear();
  Collected ended;
  scheduler.submit({5, 6}, constrained, ended.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(ended.reason, FinishReason::kGrammar);
  EXPECT_EQ(ended.text, json.text);
}

TEST(Scheduler, SubmitAndCancelFromOtherThreadsWhileStepping) {
  FakeRunner runner(4, 256, 8);
  Scheduler scheduler(runner, nullptr);
  std::vector<Collected> c(16);
  std::thread submitter([&] {
    for (int i = 0; i < 16; ++i) {
      const uint64_t id =
          scheduler.submit({i + 1}, greedy(20), c[static_cast<std::size_t>(i)].callback());
      if (i % 4 == 3) scheduler.cancel(id);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!scheduler.step() &&
        std::all_of(c.begin(), c.end(), [](const Collected& x) { return x.finished; })) {
      break;
    }
  }
  submitter.join();
  scheduler.run_until_idle();
  for (int i = 0; i < 16; ++i) {
    const Collected& x = c[static_cast<std::size_t>(i)];
    EXPECT_TRUE(x.finished) << i;
    if (x.reason != FinishReason::kCancelled) {
      EXPECT_EQ(x.tokens, fake_greedy({i + 1}, 20)) << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Prefix reuse: a free slot keeps the tokens whose K/V rows it holds

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefillPlan, ChunksStartAtTheFirstUncachedPosition) {
  PrefillChunk c = next_prefill_chunk(24, 28, 8);
  EXPECT_EQ(c.start, 24);
  EXPECT_EQ(c.valid, 4);
  EXPECT_EQ(c.chunk_end, 28);
}

TEST(PrefixReuse, APromptExtendingAFinishedOnePrefillsOnlyWhatIsNew) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> first = iota_tokens(20);
  Collected a;
  scheduler.submit(first, greedy(5), a.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(a.stats.cached_tokens, 0);
  // The slot holds the prompt and the 4 outputs fed back; the 5th was never fed.
  const std::vector<int32_t> second = concat(concat(first, a.tokens), {7, 8, 9});
  const std::size_t before = runner.prefills.size();
  Collected b;
  scheduler.submit(second, greedy(6), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.prompt_tokens, 28);
  EXPECT_EQ(b.stats.cached_tokens, 24);
  ASSERT_EQ(runner.prefills.size(), before + 1);
  const FakeRunner::PrefillCall& chunk = runner.prefills.back();
  EXPECT_EQ(chunk.start, 24);
  EXPECT_EQ(chunk.valid, 4);
  EXPECT_EQ(chunk.context, std::vector<int32_t>(second.begin(), second.begin() + 24));
  EXPECT_EQ(b.tokens, fake_greedy(second, 6));
}

TEST(PrefixReuse, TheSamePromptAgainStillRunsItsLastToken) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  const std::vector<int32_t> prompt = iota_tokens(12);
  Collected a, b;
  scheduler.submit(prompt, greedy(3), a.callback());
  scheduler.run_until_idle();
  scheduler.submit(prompt, greedy(3), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 11);
  EXPECT_EQ(runner.prefills.back().start, 11);
  EXPECT_EQ(runner.prefills.back().valid, 1);
  EXPECT_EQ(b.tokens, a.tokens);
}

// By default that last token goes through the decode step: no prefill call at all.
TEST(PrefixReuse, TheSamePromptAgainFeedsItsLastTokenToTheDecodeStep) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> prompt = iota_tokens(12);
  Collected a, b;
  scheduler.submit(prompt, greedy(3), a.callback());
  scheduler.run_until_idle();
  const std::size_t prefills = runner.prefills.size();
  const std::size_t decodes = runner.decodes.size();
  scheduler.submit(prompt, greedy(3), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 11);
  EXPECT_EQ(runner.prefills.size(), prefills);
  ASSERT_GT(runner.decodes.size(), decodes);
  EXPECT_EQ(runner.decodes[decodes].tokens, (std::vector<int32_t>{12}));
  EXPECT_EQ(runner.decodes[decodes].positions, (std::vector<int32_t>{11}));
  EXPECT_EQ(b.tokens, a.tokens);
}

TEST(PrefixReuse, OffPrefillsEveryPromptFromPositionZero) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr, SchedulerOptions{.prefix_reuse = false});
  const std::vector<int32_t> prompt = iota_tokens(12);
  Collected a, b;
  scheduler.submit(prompt, greedy(3), a.callback());
  scheduler.run_until_idle();
  scheduler.submit(concat(prompt, {5}), greedy(3), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 0);
  ASSERT_EQ(runner.prefills.size(), 4u);  // two chunks each, from 0
  EXPECT_EQ(runner.prefills[2].start, 0);
  EXPECT_EQ(b.tokens, fake_greedy(concat(prompt, {5}), 3));
}

TEST(PrefixReuse, AdmissionPicksTheSlotWithTheLongestSharedPrefixElseTheLowest) {
  FakeRunner runner(3, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  const std::vector<int32_t> a_prompt = iota_tokens(10, 1), b_prompt = iota_tokens(10, 30);
  Collected a, b;
  scheduler.submit(a_prompt, greedy(3), a.callback());  // slot 0
  scheduler.submit(b_prompt, greedy(3), b.callback());  // slot 1
  scheduler.run_until_idle();
  const std::vector<int32_t> c_prompt = concat(b_prompt, {50});
  const std::vector<int32_t> d_prompt = {60, 61};
  Collected c, d;
  const std::size_t before = runner.prefills.size();
  scheduler.submit(c_prompt, greedy(3), c.callback());
  scheduler.submit(d_prompt, greedy(3), d.callback());
  scheduler.run_until_idle();
  ASSERT_EQ(runner.prefills.size(), before + 2);
  EXPECT_EQ(runner.prefills[before].slot, 1);      // c shares b's 10 tokens
  EXPECT_EQ(runner.prefills[before + 1].slot, 0);  // d shares nothing: the lowest free slot
  EXPECT_EQ(c.stats.cached_tokens, 10);
  EXPECT_EQ(d.stats.cached_tokens, 0);
  EXPECT_EQ(c.tokens, fake_greedy(c_prompt, 3));
  EXPECT_EQ(d.tokens, fake_greedy(d_prompt, 3));
}

TEST(PrefixReuse, IdleDecodeRowsLeaveAFreeSlotsResidentRowsIntact) {
  FakeRunner runner(2, 64, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  const std::vector<int32_t> a_prompt = iota_tokens(6, 1);
  Collected a, b;
  scheduler.submit(a_prompt, greedy(2), a.callback());  // slot 0, finishes first
  scheduler.submit({40}, greedy(30), b.callback());     // slot 1, keeps decoding
  while (!a.finished) scheduler.step();
  for (int i = 0; i < 5; ++i) scheduler.step();  // decode rows 0..1: row 0 is idle
  EXPECT_EQ(runner.decodes.back().positions[0], 7) << "just past slot 0's 7 resident rows";
  const std::vector<int32_t> c_prompt = concat(concat(a_prompt, {a.tokens[0]}), {9});
  Collected c;
  scheduler.submit(c_prompt, greedy(4), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.stats.cached_tokens, 7);
  EXPECT_EQ(runner.prefills.back().slot, 0);
  EXPECT_EQ(runner.prefills.back().context,
            std::vector<int32_t>(c_prompt.begin(), c_prompt.begin() + 7));
  EXPECT_EQ(c.tokens, fake_greedy(c_prompt, 4));
  EXPECT_EQ(b.tokens, fake_greedy({40}, 30));
}

TEST(PrefixReuse, AnIdleRowOfASlotFullToTheCapacityTakesItsLastRow) {
  FakeRunner runner(2, 16, 8);
  Scheduler scheduler(runner, nullptr, every_prompt_token_prefilled());
  const std::vector<int32_t> a_prompt = iota_tokens(10);
  Collected a, b;
  scheduler.submit(a_prompt, greedy(100), a.callback());  // fills all 16 rows of slot 0
  scheduler.submit({40}, greedy(14), b.callback());
  while (!a.finished) scheduler.step();
  EXPECT_EQ(a.reason, FinishReason::kCapacity);
  scheduler.step();  // the fake runner checks that every position is below the capacity
  EXPECT_EQ(runner.decodes.back().positions[0], 15);
  scheduler.run_until_idle();
  // Slot 0 still holds the first 15 of them.
  std::vector<int32_t> c_prompt = concat(a_prompt, a.tokens);
  c_prompt.resize(15);
  c_prompt.push_back(3);
  Collected c;
  scheduler.submit(c_prompt, greedy(1), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.stats.cached_tokens, 15);
  EXPECT_EQ(runner.prefills.back().start, 15);
  EXPECT_EQ(runner.prefills.back().context,
            std::vector<int32_t>(c_prompt.begin(), c_prompt.begin() + 15));
  EXPECT_EQ(c.tokens, fake_greedy(c_prompt, 1));
}

TEST(PrefixReuse, AReusedPrefixNearTheCapacityPrefillsFromWhereItEnds) {
  FakeRunner runner(1, 18, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> first = iota_tokens(10);
  Collected a, b;
  scheduler.submit(first, greedy(3), a.callback());
  scheduler.run_until_idle();
  const std::vector<int32_t> second =
      concat(concat(first, {a.tokens[0], a.tokens[1]}), iota_tokens(6, 30));
  scheduler.submit(second, greedy(2), b.callback());  // fills the context: one token
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 12);
  const FakeRunner::PrefillCall& chunk = runner.prefills.back();
  EXPECT_EQ(chunk.start, 12);  // its padding rows past the capacity are left out
  EXPECT_EQ(chunk.valid, 6);
  EXPECT_EQ(chunk.context, std::vector<int32_t>(second.begin(), second.begin() + 12));
  EXPECT_EQ(b.tokens, fake_greedy(second, 1));
}

TEST(PrefixReuse, ARingThatWrappedKeepsOnlyTheWholeResidentPrefixReusable) {
  // No ring, or one that never wrapped (fewer resident positions than its rows): any prefix.
  EXPECT_EQ(reusable_prefix(5, 40, 0), 5);
  EXPECT_EQ(reusable_prefix(5, 15, 16), 5);
  // Wrapped: positions before the resident end were overwritten, only the whole prefix holds.
  EXPECT_EQ(reusable_prefix(40, 40, 16), 40);
  EXPECT_EQ(reusable_prefix(39, 40, 16), 0);
  EXPECT_EQ(reusable_prefix(5, 40, 16), 0);
  // Exactly `rows` resident: an idle row may have written position 16 over position 0.
  EXPECT_EQ(reusable_prefix(15, 16, 16), 0);
}

TEST(PrefixReuse, AWrappedRingIsReusedByAPromptExtendingItAndRefusedByAShorterOne) {
  // Ring of 8 rows, prompts of 20: every step's window must still be in the ring (FakeRunner).
  FakeRunner runner(2, 64, 8, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> first = iota_tokens(20);
  Collected a, decoy;
  scheduler.submit(first, greedy(5), a.callback());      // slot 0
  scheduler.submit({40}, greedy(30), decoy.callback());  // slot 1: row 0 idles meanwhile
  while (!a.finished) scheduler.step();
  for (int i = 0; i < 3; ++i) scheduler.step();
  const std::vector<int32_t> resident = concat(first, {a.tokens.begin(), a.tokens.end() - 1});
  // A chat's next turn: the whole resident prefix and more.
  const std::vector<int32_t> extended = concat(resident, {7, 8, 9});
  Collected b;
  scheduler.submit(extended, greedy(4), b.callback());
  while (!b.finished) scheduler.step();
  EXPECT_EQ(b.stats.cached_tokens, static_cast<int64_t>(resident.size()));
  EXPECT_EQ(runner.prefills.back().start, static_cast<int64_t>(resident.size()));
  EXPECT_EQ(b.tokens, fake_greedy(extended, 4));
  // A prompt sharing only part of it: the ring no longer holds that part's window.
  const std::vector<int32_t> shorter = concat(iota_tokens(12), {50});
  Collected c;
  scheduler.submit(shorter, greedy(4), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(c.stats.cached_tokens, 0);
  EXPECT_EQ(runner.prefills.back().start, 8);  // two chunks from position 0
  EXPECT_EQ(c.tokens, fake_greedy(shorter, 4));
  EXPECT_EQ(decoy.tokens, fake_greedy({40}, 30));
}

// The prompt cache: a slot's tokens kept on the host once another prompt takes the slot, and
// restored for a prompt that starts with them.

SchedulerOptions with_prompt_cache(std::size_t bytes = 1 << 20) {
  SchedulerOptions options;
  options.prompt_cache_bytes = bytes;
  options.prompt_cache_min_tokens = 8;
  return options;
}

TEST(PromptCache, APromptWhoseSlotWentToAnotherIsRestoredNotPrefilled) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr, with_prompt_cache());
  const std::vector<int32_t> agent = iota_tokens(20);          // a long shared prompt
  const std::vector<int32_t> other = iota_tokens(12, 30);      // another takes the one slot
  const std::vector<int32_t> again = concat(agent, {50, 51});  // the agent's next call
  Collected a, b, c;
  scheduler.submit(agent, greedy(3), a.callback());
  scheduler.run_until_idle();
  scheduler.submit(other, greedy(3), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(scheduler.prompt_cache_entries(), 1u);  // the agent's tokens, saved before `other`
  const std::size_t prefills = runner.prefills.size();
  scheduler.submit(again, greedy(4), c.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(scheduler.prompt_cache_hits(), 1);
  EXPECT_EQ(c.stats.cached_tokens, 20);  // the agent's prompt (its outputs differ from 50, 51)
  ASSERT_EQ(runner.prefills.size(), prefills + 1);
  EXPECT_EQ(runner.prefills.back().start, 20);
  EXPECT_EQ(runner.prefills.back().context, agent);
  EXPECT_EQ(c.tokens, fake_greedy(again, 4));
  EXPECT_EQ(b.tokens, fake_greedy(other, 3));
  // Saved once each before their slot went to another prompt, restored once.
  EXPECT_EQ(std::count(runner.calls.begin(), runner.calls.end(), 's'), 2);
  EXPECT_EQ(std::count(runner.calls.begin(), runner.calls.end(), 'r'), 1);
}

TEST(PromptCache, ShortPromptsATightBudgetAndAFailedCopyLeaveItOut) {
  FakeRunner runner(1, 64, 8);
  // Below the minimum tokens: nothing saved.
  Scheduler scheduler(runner, nullptr, with_prompt_cache());
  Collected a, b;
  scheduler.submit(iota_tokens(4), greedy(2), a.callback());
  scheduler.run_until_idle();
  scheduler.submit(iota_tokens(4, 30), greedy(2), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(scheduler.prompt_cache_entries(), 0u);
  // A budget smaller than one slot's rows: saved and dropped at once.
  FakeRunner small(1, 64, 8);
  Scheduler tight(small, nullptr, with_prompt_cache(16));
  Collected c, d, e;
  tight.submit(iota_tokens(20), greedy(2), c.callback());
  tight.run_until_idle();
  tight.submit(iota_tokens(20, 30), greedy(2), d.callback());
  tight.run_until_idle();
  EXPECT_EQ(tight.prompt_cache_entries(), 0u);
  // A save that fails: the prompt is prefilled from position 0 and its tokens are right.
  small.fail_next_call = true;
  tight.submit(iota_tokens(20, 2), greedy(3), e.callback());
  tight.run_until_idle();
  EXPECT_EQ(e.stats.cached_tokens, 0);
  EXPECT_EQ(e.tokens, fake_greedy(iota_tokens(20, 2), 3));
  EXPECT_THROW(Scheduler(small, nullptr,
                         SchedulerOptions{.prompt_cache_bytes = 1, .prompt_cache_min_tokens = 0}),
               FieldError);
}

TEST(PrefixReuse, ACancelledRequestLeavesOnlyTheRowsItWrote) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> first = iota_tokens(10);
  Collected a, b;
  const uint64_t id = scheduler.submit(first, greedy(100), a.callback());
  for (int i = 0; i < 4; ++i) scheduler.step();
  scheduler.cancel(id);
  scheduler.step();
  ASSERT_EQ(a.reason, FinishReason::kCancelled);
  // Its newest token was pending (never fed), so the slot holds the prompt and all but it.
  const std::vector<int32_t> second = concat(concat(first, a.tokens), {1});
  scheduler.submit(second, greedy(2), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, static_cast<int64_t>(first.size() + a.tokens.size() - 1));
  EXPECT_EQ(runner.prefills.back().context,
            std::vector<int32_t>(second.begin(), second.begin() + b.stats.cached_tokens));
  EXPECT_EQ(b.tokens, fake_greedy(second, 2));
}

TEST(PrefixReuse, AFailedGraphCallLeavesNothingToReuse) {
  FakeRunner runner(1, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::vector<int32_t> prompt = iota_tokens(10);
  Collected a, b;
  scheduler.submit(prompt, greedy(5), a.callback());
  scheduler.step();
  runner.fail_next_call = true;
  expect_error([&] { scheduler.step(); }, "fake: graph call failed");
  scheduler.run_until_idle();  // the caller may go on: the failed step is retried
  EXPECT_EQ(a.tokens, fake_greedy(prompt, 5));
  scheduler.submit(prompt, greedy(2), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 0);
  EXPECT_EQ(runner.prefills.back().start, 8);
  EXPECT_EQ(b.tokens, fake_greedy(prompt, 2));
}

// ---------------------------------------------------------------------------------------------
// Stop strings

TEST(StopStrings, ReleasesTextThatCannotStartAStopString) {
  StopStrings stops({"</end>", "STOP"});
  EXPECT_EQ(stops.feed("Hello </"), "Hello ");
  EXPECT_EQ(stops.feed("b> more S"), "</b> more ");
  EXPECT_EQ(stops.feed("T"), "");
  EXPECT_EQ(stops.feed("OP and the rest"), "");
  EXPECT_TRUE(stops.stopped());
  EXPECT_EQ(stops.matched(), "STOP");
  EXPECT_EQ(stops.feed("later"), "");
}

TEST(StopStrings, NamesTheEarliestStopStringFound) {
  StopStrings stops({"two", "one", "on"});
  EXPECT_EQ(stops.feed("zero one two"), "zero ");
  EXPECT_EQ(stops.matched(), "one");  // "on" starts there too, but is given after it
}

TEST(StopStrings, StopStringInsideOnePieceCutsBeforeIt) {
  StopStrings stops({"\n\n"});
  EXPECT_EQ(stops.feed("one\n\ntwo"), "one");
  EXPECT_TRUE(stops.stopped());
}

TEST(StopStrings, FlushReleasesWhatWasHeldBack) {
  StopStrings stops({"abc"});
  EXPECT_EQ(stops.feed("xxab"), "xx");
  EXPECT_EQ(stops.flush(), "ab");
  EXPECT_FALSE(stops.stopped());
  StopStrings none({});
  EXPECT_EQ(none.feed("text"), "text");
}

// ---------------------------------------------------------------------------------------------
// SchedulerThread: the scheduler stepped on its own thread, submitted to from others

// Collects one request's events on the stepping thread; wait() blocks until the last one.
struct Awaited {
  Collected collected;
  std::promise<void> done;

  EventCallback callback() {
    return [this, inner = collected.callback()](const TokenEvent& event) {
      inner(event);
      if (event.finished) done.set_value();
    };
  }
  void wait() { done.get_future().wait(); }
};

TEST(SchedulerThread, StreamsSubmittedFromManyThreadsEqualTheirSingleRuns) {
  FakeRunner runner(4, 256, 8);
  Scheduler scheduler(runner, nullptr);
  SchedulerThread thread(scheduler, 16);
  std::vector<Awaited> requests(12);
  std::vector<std::thread> clients;
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back([&, i] {
      Awaited& request = requests[static_cast<std::size_t>(i)];
      thread.submit(iota_tokens(i + 3, i + 1), greedy(16 + i), request.callback());
      request.wait();
    });
  }
  for (std::thread& client : clients) client.join();
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(requests[static_cast<std::size_t>(i)].collected.tokens,
              fake_greedy(iota_tokens(i + 3, i + 1), 16 + i))
        << i;
  }
}

TEST(SchedulerThread, RefusesWhenEverySlotIsTakenAndTheQueueIsFull) {
  FakeRunner runner(1, 256, 8);
  Scheduler scheduler(runner, nullptr);
  SchedulerThread thread(scheduler, 1);
  // The first request's first event holds the stepping thread until released, so the slot
  // stays taken and the second request stays queued.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  bool first_event = true;
  Awaited running, queued;
  thread.submit(iota_tokens(4), greedy(8), [&, inner = running.callback()](const TokenEvent& e) {
    if (first_event) {
      first_event = false;
      started.set_value();
      released.wait();
    }
    inner(e);
  });
  started.get_future().wait();
  thread.submit(iota_tokens(5), greedy(8), queued.callback());
  Collected refused;
  expect_error([&] { thread.submit(iota_tokens(6), greedy(8), refused.callback()); },
               "all slots are busy and 1 requests wait already");
  release.set_value();
  running.wait();
  queued.wait();
  EXPECT_EQ(queued.collected.tokens, fake_greedy(iota_tokens(5), 8));
  EXPECT_EQ(refused.events, 0);
}

TEST(SchedulerThread, SubmitAllQueuesEveryChoiceOrNone) {
  FakeRunner runner(2, 256, 8);
  Scheduler scheduler(runner, nullptr);
  SchedulerThread thread(scheduler, 1);
  // Three choices fit two slots and one waiting place; each has its own seed.
  std::vector<RequestOptions> options(3, greedy(12));
  for (std::size_t i = 0; i < options.size(); ++i) {
    options[i].sampling.temperature = 1.0f;
    options[i].sampling.seed = 50 + i;
  }
  std::vector<Awaited> choices(3);
  const std::vector<uint64_t> ids = thread.submit_all(
      iota_tokens(4), options, [&](std::size_t i) { return choices[i].callback(); });
  EXPECT_EQ(ids.size(), 3u);
  for (Awaited& choice : choices) choice.wait();
  // Each equals a request of its own with that choice's seed.
  for (std::size_t i = 0; i < options.size(); ++i) {
    Awaited alone;
    thread.submit(iota_tokens(4), options[i], alone.callback());
    alone.wait();
    EXPECT_EQ(choices[i].collected.tokens, alone.collected.tokens) << "choice " << i;
  }
  EXPECT_NE(choices[0].collected.tokens, choices[1].collected.tokens);

  std::vector<RequestOptions> four(4, greedy(4));
  std::vector<Collected> refused(4);
  expect_error(
      [&] {
        thread.submit_all(iota_tokens(4), four,
                          [&](std::size_t i) { return refused[i].callback(); });
      },
      "4 choices do not fit: at most 3 requests run or wait");
  for (const Collected& c : refused) EXPECT_EQ(c.events, 0);
}

// ---------------------------------------------------------------------------------------------
// The choices of one request share their prompt's prefill

// Three seeded choices (one greedy, one sampled, one under logprobs) on a prompt of several
// chunks, with sharing on and off: the same tokens, and with it one prefill and two copies.
TEST(SharedPrompt, ChoicesPrefillOnceAndDrawWhatTheyWouldAlone) {
  std::vector<RequestOptions> options(3, greedy(10));
  options[1].sampling.temperature = 1.0f;
  options[1].sampling.seed = 11;
  options[2].sampling.temperature = 0.7f;
  options[2].sampling.seed = 12;
  options[2].sampling.logprobs = true;
  const std::vector<int32_t> prompt = iota_tokens(21);
  std::vector<std::vector<int32_t>> outputs[2];
  for (bool share : {true, false}) {
    FakeRunner runner(4, 256, 8, 64, 16);  // a ring too: the copy holds the window
    SchedulerOptions scheduler_options;
    scheduler_options.share_choice_prompts = share;
    Scheduler scheduler(runner, nullptr, scheduler_options);
    std::vector<Collected> choices(3);
    scheduler.submit_choices(prompt, options, [&](std::size_t i) { return choices[i].callback(); });
    scheduler.run_until_idle();
    for (std::size_t i = 0; i < choices.size(); ++i) {
      EXPECT_EQ(choices[i].stats.prompt_tokens, 21);
      outputs[share ? 0 : 1].push_back(choices[i].tokens);
    }
    if (share) {
      EXPECT_EQ(runner.prefills.size(), 3u);            // 8 + 8 + 5 tokens, once
      EXPECT_TRUE(runner.prefills.back().want_logits);  // two choices draw from the logits
      EXPECT_EQ(runner.copies, (std::vector<std::pair<int32_t, int32_t>>{{0, 1}, {0, 2}}));
      EXPECT_EQ(choices[1].stats.cached_tokens, 21);
      EXPECT_EQ(runner.calls.substr(0, 5), "pppcc");  // copied before any decode step
    } else {
      EXPECT_EQ(runner.prefills.size(), 9u);
      EXPECT_TRUE(runner.copies.empty());
    }
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0][0], fake_greedy(prompt, 10));
  EXPECT_NE(outputs[0][1], outputs[0][2]);
}

// Choices that find no free slot when the first one's prefill ends prefill their own; so do the
// others when the first is cancelled before its prefill ends.
TEST(SharedPrompt, ChoicesWithoutASlotOrLeaderPrefillAlone) {
  {
    FakeRunner runner(2, 256, 8);
    Scheduler scheduler(runner, nullptr);
    std::vector<Collected> choices(3);
    scheduler.submit_choices(iota_tokens(12), std::vector<RequestOptions>(3, greedy(4)),
                             [&](std::size_t i) { return choices[i].callback(); });
    scheduler.run_until_idle();
    for (const Collected& choice : choices) {
      EXPECT_EQ(choice.tokens, fake_greedy(iota_tokens(12), 4));
    }
    EXPECT_EQ(runner.copies.size(), 1u);
    // The third prefilled in a slot freed by one of the first two, after what it held.
    EXPECT_EQ(choices[2].stats.cached_tokens, 11);
  }
  {
    FakeRunner runner(3, 256, 8);
    Scheduler scheduler(runner, nullptr);
    std::vector<Collected> choices(3);
    const std::vector<uint64_t> ids =
        scheduler.submit_choices(iota_tokens(20), std::vector<RequestOptions>(3, greedy(4)),
                                 [&](std::size_t i) { return choices[i].callback(); });
    scheduler.step();  // the first chunk of the leader's prompt
    scheduler.cancel(ids[0]);
    scheduler.run_until_idle();
    EXPECT_EQ(choices[0].reason, FinishReason::kCancelled);
    for (std::size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(choices[i].tokens, fake_greedy(iota_tokens(20), 4)) << "choice " << i;
    }
    EXPECT_TRUE(runner.copies.empty());
  }
}

// A choice whose grammar or first token ends it at once does not disturb the others.
TEST(SharedPrompt, ChoicesEndingAtTheirFirstTokenLeaveTheOthers) {
  FakeRunner runner(3, 256, 8);
  Scheduler scheduler(runner, nullptr);
  std::vector<RequestOptions> options = {greedy(1), greedy(5), greedy(1)};
  std::vector<Collected> choices(3);
  scheduler.submit_choices(iota_tokens(6), options,
                           [&](std::size_t i) { return choices[i].callback(); });
  scheduler.run_until_idle();
  EXPECT_EQ(choices[0].tokens, fake_greedy(iota_tokens(6), 1));
  EXPECT_EQ(choices[1].tokens, fake_greedy(iota_tokens(6), 5));
  EXPECT_EQ(choices[2].tokens, fake_greedy(iota_tokens(6), 1));
  EXPECT_EQ(runner.prefills.size(), 1u);
}

TEST(SchedulerThread, StopCancelsWhatIsLeftAndRefusesNewRequests) {
  FakeRunner runner(1, 4096, 8);
  Scheduler scheduler(runner, nullptr);
  SchedulerThread thread(scheduler, 4);
  Awaited first, second;
  thread.submit(iota_tokens(4), greedy(4000), first.callback());
  thread.submit(iota_tokens(4), greedy(4000), second.callback());
  thread.stop();
  first.wait();
  second.wait();
  EXPECT_EQ(second.collected.reason, FinishReason::kCancelled);
  Collected late;
  expect_error([&] { thread.submit(iota_tokens(4), greedy(4), late.callback()); },
               "the scheduler thread has stopped");
}

TEST(SchedulerThread, AFailingStepEndsTheRequestsAndTheThreadGoesOn) {
  FakeRunner runner(2, 256, 8);
  Scheduler scheduler(runner, nullptr);
  runner.fail_next_call = true;
  SchedulerThread thread(scheduler, 4);
  Awaited failed, later;
  thread.submit(iota_tokens(4), greedy(8), failed.callback());
  failed.wait();
  EXPECT_EQ(failed.collected.reason, FinishReason::kCancelled);
  thread.submit(iota_tokens(4), greedy(8), later.callback());
  later.wait();
  EXPECT_EQ(later.collected.tokens, fake_greedy(iota_tokens(4), 8));
}

// Slots to and from files (the server's /slots/{id} actions): a slot saved, erased and restored
// into another slot holds its tokens again, so a prompt that starts with them prefills only the
// rest; a busy slot, a missing file, a file of another model and a damaged one are refused.
SlotActionResult run_action(Scheduler& scheduler, SlotAction action) {
  std::optional<SlotActionResult> result;
  scheduler.submit_slot_action(std::move(action), [&](const SlotActionResult& r) { result = r; });
  scheduler.step();
  EXPECT_TRUE(result.has_value());
  return result.value_or(SlotActionResult{});
}

TEST(SlotFiles, ASavedSlotRestoredIntoAnotherIsReusedByAPromptThatStartsWithIt) {
  FakeRunner runner(2, 64, 8);
  Scheduler scheduler(runner, nullptr);
  const std::filesystem::path dir = testing::scratch_dir("scheduler/slot-files");
  for (const char* name : {"a.bin", "cut.bin", "busy.bin"}) std::filesystem::remove(dir / name);
  const std::vector<int32_t> agent = iota_tokens(20);
  Collected a;
  scheduler.submit(agent, greedy(3), a.callback());
  scheduler.run_until_idle();
  using Kind = SlotAction::Kind;
  using Problem = SlotActionResult::Problem;
  const SlotActionResult saved = run_action(scheduler, {Kind::kSave, 0, dir / "a.bin", "m"});
  ASSERT_EQ(saved.problem, Problem::kNone) << saved.message;
  EXPECT_EQ(saved.tokens, 22);  // the prompt and the outputs fed back
  EXPECT_EQ(saved.bytes, std::filesystem::file_size(dir / "a.bin"));
  EXPECT_EQ(run_action(scheduler, {Kind::kErase, 0, {}, ""}).tokens, 22);

  EXPECT_EQ(run_action(scheduler, {Kind::kRestore, 1, dir / "none.bin", "m"}).problem,
            Problem::kNoFile);
  const SlotActionResult other = run_action(scheduler, {Kind::kRestore, 1, dir / "a.bin", "n"});
  EXPECT_EQ(other.problem, Problem::kBadFile);
  EXPECT_NE(other.message.find("saved from m"), std::string::npos) << other.message;
  const std::string whole = testing::read_text(dir / "a.bin");
  std::ofstream(dir / "cut.bin", std::ios::binary) << whole.substr(0, whole.size() - 5);
  EXPECT_EQ(run_action(scheduler, {Kind::kRestore, 1, dir / "cut.bin", "m"}).problem,
            Problem::kBadFile);

  const SlotActionResult restored = run_action(scheduler, {Kind::kRestore, 1, dir / "a.bin", "m"});
  ASSERT_EQ(restored.problem, Problem::kNone) << restored.message;
  EXPECT_EQ(restored.tokens, 22);
  EXPECT_EQ(runner.cache(1), runner.cache(0));  // the rows written back as they were saved

  // The agent's next call goes to slot 1, which holds its tokens, and prefills only the rest.
  std::vector<int32_t> again = agent;
  again.insert(again.end(), a.tokens.begin(), a.tokens.end() - 1);
  again.insert(again.end(), {50, 51});
  Collected b;
  const std::size_t prefills = runner.prefills.size();
  scheduler.submit(again, greedy(4), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(b.stats.cached_tokens, 22);
  ASSERT_EQ(runner.prefills.size(), prefills + 1);
  EXPECT_EQ(runner.prefills.back().slot, 1);
  EXPECT_EQ(b.tokens, fake_greedy(again, 4));

  // A slot a request holds is refused; a slot that does not exist is a FieldError.
  Collected c;
  scheduler.submit(iota_tokens(6, 40), greedy(50), c.callback());  // to the lowest free slot
  scheduler.step();
  EXPECT_EQ(run_action(scheduler, {Kind::kSave, 0, dir / "busy.bin", "m"}).problem, Problem::kBusy);
  EXPECT_FALSE(std::filesystem::exists(dir / "busy.bin"));
  EXPECT_THROW(scheduler.submit_slot_action({Kind::kErase, 2, {}, ""}, {}), FieldError);
  scheduler.run_until_idle();
}

// ---------------------------------------------------------------------------------------------
// Speculative decoding. With a vocabulary of 5 the fake model's next token depends on the last
// token alone (5 * position vanishes), so its text cycles 0 1 4 3 and prompt lookup guesses it;
// prompts that break the cycle make some drafts wrong.

TEST(Speculation, PromptLookupTakesTheLongestSuffixAtItsLatestOccurrence) {
  const std::vector<int32_t> context = {7, 1, 2, 3, 9, 1, 2, 3, 4, 8, 2, 3};
  // "2 3" last occurred before "4 8 2 3"; "8 2 3" never did, so the 2-gram decides.
  EXPECT_EQ(ngram_draft(context, 3), (std::vector<int32_t>{4, 8, 2}));
  EXPECT_EQ(ngram_draft(context, 1), (std::vector<int32_t>{4}));
  // A longer match wins over a later shorter one: "1 2 3" after 9 continues with 4.
  const std::vector<int32_t> longer = {1, 2, 3, 5, 6, 2, 3, 7, 1, 2, 3};
  EXPECT_EQ(ngram_draft(longer, 2), (std::vector<int32_t>{5, 6}));
  // The continuation is cut at the context's end; no match, or one token, gives nothing.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{5, 5, 5}, 4), (std::vector<int32_t>{5}));
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{1}, 4).empty());
  EXPECT_TRUE(ngram_draft(context, 0).empty());

  EXPECT_EQ(accepted_drafts(std::vector<int32_t>{4, 8, 2}, std::vector<int32_t>{4, 8, 5, 1}), 2);
  EXPECT_EQ(accepted_drafts(std::vector<int32_t>{4, 8}, std::vector<int32_t>{4, 8, 5}), 2);
  EXPECT_EQ(accepted_drafts(std::vector<int32_t>{}, std::vector<int32_t>{3}), 0);
  EXPECT_EQ(parse_speculation("auto"), Speculation::kNgram);
  EXPECT_EQ(parse_speculation("off"), Speculation::kOff);
  EXPECT_FALSE(parse_speculation("eagle"));

  // Each drafted token stands with odds from the recent runs, fading to the prior (2 in 3).
  AcceptanceEstimate estimate;
  EXPECT_DOUBLE_EQ(estimate.odds(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(estimate.expected(2), 2.0 / 3 + 4.0 / 9);
  estimate.verified(4, 0);
  EXPECT_DOUBLE_EQ(estimate.odds(), 2.0 / 4);
  estimate.verified(4, 4);
  EXPECT_GT(estimate.odds(), 0.7);
  for (int i = 0; i < 100; ++i) estimate.decoded();
  EXPECT_NEAR(estimate.odds(), 2.0 / 3, 1e-3);

  // A verify call runs where its expected tokens come sooner than decode steps give them; an
  // untried verify call is tried, and until a decode step ran nothing is known to beat.
  // The first call of each is left out (one-time costs).
  StepCosts costs;
  EXPECT_TRUE(costs.verify_pays(1, 1.5, 1));
  costs.verify_took(1, 5.0);
  EXPECT_TRUE(costs.verify_pays(1, 1.5, 1)) << "the first call's time is not its cost";
  costs.verify_took(1, 0.030);
  EXPECT_FALSE(costs.verify_pays(1, 5, 1));
  costs.decode_took(1, 1.0);
  costs.decode_took(1, 0.010);
  EXPECT_TRUE(costs.verify_pays(1, 3.5, 1));
  EXPECT_FALSE(costs.verify_pays(1, 2.5, 1));
  EXPECT_TRUE(costs.verify_pays(2, 1, 1)) << "untried over 2 sequences";
  // A call far slower than the average (a new graph's first) is left out, unless they keep
  // coming.
  costs.verify_took(1, 3.0);
  EXPECT_NEAR(costs.verify(1), 0.030, 1e-9);
  costs.verify_took(1, 3.0);
  costs.verify_took(1, 3.0);
  EXPECT_GT(costs.verify(1), 0.5);
  costs.verify_took(1, 0.030);
  for (int i = 0; i < 40; ++i) costs.verify_took(1, 0.030);
  EXPECT_NEAR(costs.verify(1), 0.030, 1e-3);
  // Not tried lately: tried again.
  for (int64_t i = 0; i < StepCosts::kRetryAfter; ++i) costs.decode_took(1, 0.010);
  EXPECT_TRUE(costs.verify_pays(1, 1.1, 1));
  costs.verify_took(1, 0.030);
  EXPECT_FALSE(costs.verify_pays(1, 1.1, 1));
}

struct SpeculativeRun {
  std::vector<Collected> streams;
  std::string calls;
  std::vector<std::vector<int32_t>> caches;  // each slot's rows at the end
  int64_t verify_end = 0;
};

// `prompts` submitted together (request i with budgets[i] and eos_ids), run to the end on a
// fake of vocabulary 5 with speculation as given.
SpeculativeRun run_speculative(Speculation speculation,
                               const std::vector<std::vector<int32_t>>& prompts,
                               const std::vector<int64_t>& budgets, int64_t capacity = 128,
                               int64_t ring_rows = 0, std::vector<int32_t> eos_ids = {}) {
  FakeRunner runner(3, capacity, 16, 5, ring_rows);
  runner.set_verify(5, 2);
  SchedulerOptions options;
  options.speculation = speculation;
  options.draft_max = 4;
  options.verify_when_it_pays = false;  // the fake takes no time to weigh
  Scheduler scheduler(runner, nullptr, options);
  SpeculativeRun run;
  run.streams.resize(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    RequestOptions request = greedy(budgets[i]);
    request.eos_ids = eos_ids;
    scheduler.submit(prompts[i], request, run.streams[i].callback());
  }
  scheduler.run_until_idle();
  run.calls = runner.calls;
  for (int32_t slot = 0; slot < 3; ++slot) run.caches.push_back(runner.cache(slot));
  run.verify_end = runner.verify_end;
  return run;
}

TEST(Scheduler, SpeculationGivesTheTokensOfDecodeAndKeepsOnlyStandingDraftsRows) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 4, 2, 0, 1, 4, 3, 2, 2, 4, 0, 1}, {0, 1, 4, 3, 0, 1, 4}, {2, 3}};
  const std::vector<int64_t> budgets = {40, 33, 25};
  const SpeculativeRun plain = run_speculative(Speculation::kOff, prompts, budgets);
  const SpeculativeRun fast = run_speculative(Speculation::kNgram, prompts, budgets);
  EXPECT_EQ(plain.calls.find('v'), std::string::npos);
  EXPECT_NE(fast.calls.find('v'), std::string::npos);
  // Three sequences decoding do not fit a verify call of two: decode steps ran then.
  EXPECT_NE(fast.calls.find('d'), std::string::npos);
  int64_t drafted = 0, accepted = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const Collected& stream = fast.streams[i];
    EXPECT_EQ(stream.tokens, plain.streams[i].tokens) << "request " << i;
    EXPECT_EQ(stream.tokens, fake_greedy(prompts[i], budgets[i], 5)) << "request " << i;
    EXPECT_EQ(stream.reason, FinishReason::kLength);
    EXPECT_EQ(stream.stats.output_tokens, budgets[i]);
    EXPECT_EQ(stream.events, budgets[i]);  // one event per token, drafted or not
    drafted += stream.stats.drafted_tokens;
    accepted += stream.stats.accepted_tokens;
    // The slot's rows hold the prompt and every output fed back (not the last): the rows of
    // rejected drafts were rewritten by the tokens that came instead.
    std::vector<int32_t> fed = prompts[i];
    fed.insert(fed.end(), stream.tokens.begin(), stream.tokens.end() - 1);
    const std::vector<int32_t>& rows = fast.caches[i];
    EXPECT_EQ(
        std::vector<int32_t>(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(fed.size())),
        fed)
        << "request " << i;
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(drafted, accepted) << "the prompts' broken cycles should have cost some drafts";
  std::printf("fake: %lld of %lld drafted tokens accepted\n", static_cast<long long>(accepted),
              static_cast<long long>(drafted));
}

TEST(Scheduler, SpeculationStopsWhereDecodeStops) {
  // An end-of-sequence token inside a run of standing drafts ends the stream there, and a full
  // context ends it as decode does.
  const std::vector<std::vector<int32_t>> prompts = {{0, 1, 4, 3, 0, 1, 4, 3, 0}};
  for (const std::vector<int32_t>& eos : {std::vector<int32_t>{3}, std::vector<int32_t>{}}) {
    const SpeculativeRun plain = run_speculative(Speculation::kOff, prompts, {60}, 40, 0, eos);
    const SpeculativeRun fast = run_speculative(Speculation::kNgram, prompts, {60}, 40, 0, eos);
    EXPECT_EQ(fast.streams[0].tokens, plain.streams[0].tokens);
    EXPECT_EQ(fast.streams[0].reason, plain.streams[0].reason);
    EXPECT_EQ(fast.streams[0].message, plain.streams[0].message);
    EXPECT_EQ(plain.streams[0].reason, eos.empty() ? FinishReason::kCapacity : FinishReason::kEos);
    EXPECT_LE(fast.verify_end, 40);
  }
}

TEST(Scheduler, SpeculationDraftsOnlyWhileARingHoldsTheWholeCall) {
  // A rejected draft's row would replace a ring row a later token attends to (the fake checks
  // every read of the window): no verify call reaches the ring's length.
  const std::vector<std::vector<int32_t>> prompts = {{0, 1, 4, 3, 2, 2, 0, 1}};
  const SpeculativeRun plain = run_speculative(Speculation::kOff, prompts, {40}, 128, 12);
  const SpeculativeRun fast = run_speculative(Speculation::kNgram, prompts, {40}, 128, 12);
  EXPECT_EQ(fast.streams[0].tokens, plain.streams[0].tokens);
  EXPECT_NE(fast.calls.find('v'), std::string::npos);
  EXPECT_LE(fast.verify_end, 12);
}

TEST(Scheduler, SpeculationLeavesSampledRequestsToTheDecodeStep) {
  FakeRunner runner(2, 64, 16, 5);
  runner.set_verify(5, 2);
  SchedulerOptions options;
  options.speculation = Speculation::kNgram;
  options.draft_max = 4;
  Scheduler scheduler(runner, nullptr, options);
  RequestOptions sampled = greedy(20);
  sampled.sampling.temperature = 0.7f;
  sampled.sampling.seed = 3;
  Collected a, b;
  scheduler.submit({0, 1, 4, 3, 0, 1}, sampled, a.callback());
  scheduler.submit({0, 1, 4, 3, 0, 1}, greedy(20), b.callback());
  scheduler.run_until_idle();
  EXPECT_EQ(a.tokens.size(), 20u);
  EXPECT_EQ(a.stats.drafted_tokens, 0);
  EXPECT_EQ(b.tokens, fake_greedy({0, 1, 4, 3, 0, 1}, 20, 5));

  // A runner without a verify graph cannot speculate: a FieldError naming the option.
  FakeRunner plain(1, 64, 16, 5);
  expect_error(
      [&] { Scheduler refused(plain, nullptr, options); },
      "speculation: ngram needs a runner with a verify graph, which the fake runner lacks");
}

}  // namespace
}  // namespace xlacel::engine
