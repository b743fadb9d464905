// The engine on real runtimes, one suite run over both (IREE and XLA through PJRT): the executor
// calls the graphs by signature, the scheduler batches sequences into slots, and every stream
// must equal HF transformers' greedy output token for token (tests/data/models/*_reference.json,
// written by tools/reference/llama.py) whether it runs alone or batched with requests of other
// lengths joining and leaving; teacher-forced logits must lie within kLogitTolerance of HF's;
// seeded sampling must not depend on what else is in the batch; chunked prefill must agree with
// token-by-token decoding; a prompt prefilled after a prefix its slot kept (prefix reuse) must
// give the tokens of a full prefill. Tiny models cover every family and every GGUF format that
// --weights auto keeps resident. Tests skip (with the reason) when a runtime or the default
// model is missing. Compiled graphs go to a scratch compile cache, never the user's.
//
// Tolerance: HF's own cached-vs-uncached recompute differs by up to 5.5e-5 (SmolLM2 logits ~20
// in magnitude; full_recompute in the reference), float32 summation-order noise. Our graphs sum
// in other orders again (tiled matmuls, the runtimes' own exp/cos/sin), so we expect a few times
// that; 2e-3 leaves a wide margin while still catching a real mistake (a wrong RoPE angle, mask
// or norm moves logits by more than 0.1). The measured maximum is printed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backends.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/iree_compiler.h"
#include "engine/chat_images.h"
#include "engine/conversation.h"
#include "engine/engine.h"
#include "engine/model_images.h"
#include "engine/prefill_plan.h"
#include "expect_error.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/test_support.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel::engine {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr double kLogitTolerance = 2e-3;

json read_json(const fs::path& path) {
  return json::parse(testing::read_text(path));
}

std::vector<int32_t> ids(const json& array) {
  return array.get<std::vector<int32_t>>();
}

std::size_t matched(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  std::size_t n = 0;
  while (n < got.size() && n < want.size() && got[n] == want[n]) ++n;
  return n;
}

// Why `runtime` cannot run here, or nullopt.
std::optional<std::string> missing_runtime(const std::string& runtime) {
  const fs::path venv = testing::venv();
  if (runtime == "iree") {
    if (!fs::exists(venv / "bin" / "iree-compile")) {
      return "iree-compile not found in " + venv.string() + " (run scripts/setup)";
    }
    if (std::system((testing::quote(venv / "bin" / "python") +
                     " -c 'import iree.runtime, ml_dtypes, numpy' 2>/dev/null")
                        .c_str()) != 0) {
      return "the venv's python cannot import iree.runtime (run scripts/setup)";
    }
    return std::nullopt;
  }
  try {
    pjrt::find_plugin(device::DeviceKind::kCpu, "");
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

struct EngineShape {
  int64_t slots = 1;
  int64_t capacity = 256;
  int64_t prefill_bucket = 16;
  int64_t small_prefill_bucket = 16;  // the bucket: no second one
  int64_t prefill_sequences = 4;      // chunks of the small bucket per call, at most
  int64_t draft_max = 0;              // speculative decoding (n-gram) with these drafts; 0: off
};

// An engine of `shape` on `runtime`, compiling into the program's own cache (test_paths.h).
std::unique_ptr<Engine> open_on(const std::string& runtime, const std::string& model_path,
                                const EngineShape& shape, bool logits = false,
                                bool prefix_reuse = true, bool share_choice_prompts = true,
                                std::size_t prompt_cache_bytes = 0) {
  EngineOptions options;
  options.runtime = runtime;
  options.executor.slots = shape.slots;
  options.executor.capacity = shape.capacity;
  options.executor.prefill_bucket = shape.prefill_bucket;
  options.executor.small_prefill_bucket = shape.small_prefill_bucket;
  options.executor.prefill_sequences = shape.prefill_sequences;
  options.executor.preload_logits = logits;
  options.scheduler.prefix_reuse = prefix_reuse;
  options.scheduler.share_choice_prompts = share_choice_prompts;
  options.scheduler.prompt_cache_bytes = prompt_cache_bytes;
  options.scheduler.prompt_cache_min_tokens = 8;
  if (shape.draft_max > 0) {
    options.scheduler.speculation = Speculation::kNgram;
    options.scheduler.draft_max = shape.draft_max;
  }
  return std::make_unique<Engine>(ModelFiles::open(model_path), options);
}

using FamilyRuntime = std::tuple<std::string, std::string>;
// The test name of a family on a runtime: "<family>_<runtime>".
std::string family_runtime_name(const ::testing::TestParamInfo<FamilyRuntime>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

class EngineOnRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (auto missing = missing_runtime(GetParam())) GTEST_SKIP() << *missing;
  }

  std::unique_ptr<Engine> open(const std::string& model_path, const EngineShape& shape,
                               bool logits = false, bool prefix_reuse = true,
                               bool share_choice_prompts = true) {
    return open_on(GetParam(), model_path, shape, logits, prefix_reuse, share_choice_prompts);
  }

  std::string tiny() const { return testing::test_data("models/tiny_llama3").string(); }
  json tiny_reference() const {
    return read_json(testing::test_data("models/tiny_llama3_reference.json"));
  }
};

// One request's output, collected from its events.
struct Stream {
  std::vector<int32_t> tokens;
  std::string text;
  bool finished = false;
  FinishReason reason = FinishReason::kLength;
  std::string message;
  RequestStats stats;

  EventCallback callback() {
    return [this](const TokenEvent& event) {
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

RequestOptions greedy(int64_t max_tokens) {
  RequestOptions options;  // no EOS ids: the references ran all their steps
  options.max_tokens = max_tokens;
  return options;
}

// Every reference prompt as its own request, each submitted at a different step and with its
// own budget (so requests join and leave mid-run); returns the streams in prompt order and the
// widest decode batch seen.
std::pair<std::vector<Stream>, int64_t> run_staggered(Scheduler& scheduler, const json& reference,
                                                      int copies) {
  const std::size_t prompts = reference["prompts"].size();
  std::vector<Stream> streams(prompts * static_cast<std::size_t>(copies));
  int64_t widest = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const json& prompt = reference["prompts"][i % prompts];
    const auto budget = static_cast<int64_t>(prompt["output_ids"].size() - 3 * (i / prompts));
    scheduler.submit(ids(prompt["prompt_ids"]), greedy(budget), streams[i].callback());
    for (std::size_t s = 0; s < i % 3; ++s) {  // a few steps between submissions
      scheduler.step();
      widest = std::max(widest, scheduler.last_step().decode_sequences);
    }
  }
  while (scheduler.step()) widest = std::max(widest, scheduler.last_step().decode_sequences);
  return {std::move(streams), widest};
}

void expect_streams_match(const std::vector<Stream>& streams, const json& reference,
                          const std::string& label) {
  const std::size_t prompts = reference["prompts"].size();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const json& prompt = reference["prompts"][i % prompts];
    const auto want_all = ids(prompt["output_ids"]);
    const std::vector<int32_t> want(
        want_all.begin(),
        want_all.begin() + static_cast<std::ptrdiff_t>(want_all.size() - 3 * (i / prompts)));
    EXPECT_TRUE(streams[i].finished);
    EXPECT_EQ(streams[i].tokens, want)
        << label << " " << prompt["name"] << " (request " << i << "): differs at token "
        << matched(streams[i].tokens, want);
    std::printf("%s %-18s request %zu: %zu/%zu tokens match HF\n", label.c_str(),
                prompt["name"].get<std::string>().c_str(), i, matched(streams[i].tokens, want),
                want.size());
  }
}

// The reference's streams with speculative decoding (n-gram drafts of up to verify_tokens - 1
// checked by the executor's verify graph), batched and staggered as run_staggered runs them
// (`copies` of each prompt), then, where `alone`, each prompt alone: HF's tokens again, as
// greedy speculation promises. Prints and returns how many drafted tokens stood.
int64_t expect_speculation_matches(executor::ModelRunner& runner, const json& reference,
                                   const std::string& label, int copies = 2, bool alone = true) {
  SchedulerOptions options;
  options.speculation = Speculation::kNgram;
  options.draft_max = runner.capabilities().verify_tokens - 1;
  options.verify_when_it_pays = false;  // every draft checked, whatever the timings
  Scheduler scheduler(runner, nullptr, options);
  auto [streams, widest] = run_staggered(scheduler, reference, copies);
  expect_streams_match(streams, reference, label + " speculative batched");
  int64_t drafted = 0, accepted = 0;
  for (const Stream& stream : streams) {
    drafted += stream.stats.drafted_tokens;
    accepted += stream.stats.accepted_tokens;
  }
  for (const json& prompt : reference["prompts"]) {
    if (!alone) break;
    Stream stream;
    const auto want = ids(prompt["output_ids"]);
    scheduler.submit(ids(prompt["prompt_ids"]), greedy(static_cast<int64_t>(want.size())),
                     stream.callback());
    scheduler.run_until_idle();
    EXPECT_EQ(stream.tokens, want) << label << " speculative alone " << prompt["name"]
                                   << ": differs at token " << matched(stream.tokens, want);
    drafted += stream.stats.drafted_tokens;
    accepted += stream.stats.accepted_tokens;
  }
  std::printf("%s speculative: %lld of %lld drafted tokens accepted (widest batch %lld)\n",
              label.c_str(), static_cast<long long>(accepted), static_cast<long long>(drafted),
              static_cast<long long>(widest));
  return accepted;
}

// Teacher-forced logits of every reference prompt on slot `slot`: the prompt through the
// prefill graph in chunks, then HF's own tokens fed one by one; compared at HF's top ids.
// Returns the largest |difference|.
double teacher_forced_max_diff(executor::Executor& executor, const json& reference, int32_t slot) {
  const executor::Capabilities& caps = executor.capabilities();
  double worst = 0;
  for (const json& prompt : reference["prompts"]) {
    const auto prompt_ids = ids(prompt["prompt_ids"]);
    const auto total = static_cast<int64_t>(prompt_ids.size());
    executor::PrefillOutput prefill;
    for (int64_t cached = 0; cached < total;) {
      const PrefillChunk chunk = next_prefill_chunk(cached, total, caps.prefill_bucket);
      std::vector<int32_t> bucket(
          static_cast<std::size_t>(prefill_bucket_for(chunk.valid, caps.prefill_buckets)), 0);
      std::copy_n(prompt_ids.begin() + chunk.start, chunk.valid, bucket.begin());
      executor.prefill_chunk(slot, bucket, static_cast<int32_t>(chunk.start),
                             static_cast<int32_t>(chunk.valid), chunk.chunk_end == total, prefill);
      cached = chunk.chunk_end;
    }
    std::vector<float> logits = prefill.logits;
    const auto outputs = ids(prompt["output_ids"]);
    const auto rows = static_cast<std::size_t>(executor.decode_rows(slot + 1));
    for (std::size_t step = 0; step < prompt["steps"].size(); ++step) {
      if (step > 0) {
        std::vector<int32_t> tokens(rows, 0), positions(rows, 0);
        tokens[static_cast<std::size_t>(slot)] = outputs[step - 1];
        positions[static_cast<std::size_t>(slot)] = static_cast<int32_t>(total + step - 1);
        executor::DecodeOutput out;
        executor.decode(tokens, positions, true, out);
        const auto vocab = static_cast<std::size_t>(caps.vocab_size);
        logits.assign(out.logits.begin() + static_cast<std::ptrdiff_t>(slot * vocab),
                      out.logits.begin() + static_cast<std::ptrdiff_t>((slot + 1) * vocab));
      }
      const json& top = prompt["steps"][step]["top"];
      const auto top_ids = top["ids"].get<std::vector<int64_t>>();
      const auto values = top["values"].get<std::vector<double>>();
      for (std::size_t i = 0; i < top_ids.size(); ++i) {
        worst = std::max(worst, std::abs(values[i] - logits[static_cast<std::size_t>(top_ids[i])]));
      }
    }
  }
  return worst;
}

// ---------------------------------------------------------------------------------------------
// The tiny random-weight Llama-3 (llama3 rope scaling, GQA, untied head), prompts of 5 to 150
// tokens in buckets of 16.

TEST_P(EngineOnRuntime, TinyLlama3GreedyMatchesHfAloneAndBatched) {
  const json reference = tiny_reference();
  {
    auto engine = open(tiny(), {1, 256, 16});
    auto [streams, widest] = run_staggered(engine->scheduler(), reference, 1);
    expect_streams_match(streams, reference, GetParam() + " tiny alone");
    EXPECT_EQ(widest, 1);
  }
  auto engine = open(tiny(), {4, 256, 16});
  auto [streams, widest] = run_staggered(engine->scheduler(), reference, 2);
  expect_streams_match(streams, reference, GetParam() + " tiny batched");
  EXPECT_GE(widest, 3) << "requests should have been decoded together";
}

// Speculative decoding keeps only the drafts the model's argmax confirms, so its streams are
// HF's greedy ones. SmolLM2 checks it at a real vocabulary (49152), where the verify graph's
// head is large, and on text that repeats itself, so that drafts stand (the tiny model's random
// text rarely does).
TEST_P(EngineOnRuntime, SpeculativeDecodingGivesHfTokensAloneAndBatched) {
  auto tiny_engine = open(tiny(), {4, 256, 16, 16, 4, 7});
  expect_speculation_matches(tiny_engine->executor(), tiny_reference(), GetParam() + " tiny");
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  auto engine = open(model, {4, 512, 64, 16, 4, 4});
  const json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  EXPECT_GT(expect_speculation_matches(engine->executor(), reference, GetParam() + " SmolLM2"), 0);
  // The engine's own scheduler drafts too (EngineOptions::scheduler).
  auto [streams, widest] = run_staggered(engine->scheduler(), reference, 1);
  expect_streams_match(streams, reference, GetParam() + " SmolLM2 engine speculative");
  int64_t drafted = 0;
  for (const Stream& stream : streams) drafted += stream.stats.drafted_tokens;
  EXPECT_GT(drafted, 0);
}

TEST_P(EngineOnRuntime, TinyLlama3TeacherForcedLogitsMatchHfInAnySlot) {
  const json reference = tiny_reference();
  auto engine = open(tiny(), {4, 256, 16}, true);
  for (int32_t slot : {0, 3}) {
    const double diff = teacher_forced_max_diff(engine->executor(), reference, slot);
    std::printf("%s tiny slot %d: max |logit diff| vs HF %.3g (tolerance %.g)\n",
                GetParam().c_str(), slot, diff, kLogitTolerance);
    EXPECT_LE(diff, kLogitTolerance) << "slot " << slot;
  }
}

TEST_P(EngineOnRuntime, TinyLlama3ChunkedPrefillAgreesWithTokenByTokenDecode) {
  const json reference = tiny_reference();
  const auto prompt = ids(reference["prompts"].back()["prompt_ids"]);  // 150 tokens
  auto engine = open(tiny(), {2, 256, 16}, true);
  executor::Executor& executor = engine->executor();
  // Slot 0: chunked prefill. Slot 1: the first token by prefill, then one decode step each.
  executor::PrefillOutput chunked;
  const auto total = static_cast<int64_t>(prompt.size());
  for (int64_t cached = 0; cached < total;) {
    const PrefillChunk chunk = next_prefill_chunk(cached, total, 16);
    std::vector<int32_t> bucket(16, 0);
    std::copy_n(prompt.begin() + chunk.start, chunk.valid, bucket.begin());
    executor.prefill_chunk(0, bucket, static_cast<int32_t>(chunk.start),
                           static_cast<int32_t>(chunk.valid), chunk.chunk_end == total, chunked);
    cached = chunk.chunk_end;
  }
  std::vector<int32_t> first(16, 0);
  first[0] = prompt[0];
  executor::PrefillOutput ignored;
  executor.prefill_chunk(1, first, 0, 1, false, ignored);
  executor::DecodeOutput stepwise;
  for (int64_t p = 1; p < total; ++p) {
    // Row 0 rewrites slot 0's next free row; slot 0's prompt is untouched.
    const std::vector<int32_t> tokens = {0, prompt[static_cast<std::size_t>(p)]};
    const std::vector<int32_t> positions = {static_cast<int32_t>(total), static_cast<int32_t>(p)};
    executor.decode(tokens, positions, true, stepwise);
  }
  const auto vocab = static_cast<std::size_t>(executor.capabilities().vocab_size);
  double diff = 0;
  for (std::size_t i = 0; i < vocab; ++i) {
    diff = std::max(diff,
                    static_cast<double>(std::abs(chunked.logits[i] - stepwise.logits[vocab + i])));
  }
  std::printf("%s tiny: chunked prefill vs token-by-token decode, max |logit diff| %.3g\n",
              GetParam().c_str(), diff);
  EXPECT_LE(diff, kLogitTolerance);
  EXPECT_EQ(chunked.token, stepwise.tokens[1]);
}

TEST_P(EngineOnRuntime, TinyLlama3FillsTheContextThenStopsWithAMessage) {
  // 150 prompt tokens in buckets of 64 with room for 160: the last chunk's padding reaches past
  // the cache and is left out.
  const json reference = tiny_reference();
  const json& prompt = reference["prompts"].back();
  ASSERT_EQ(prompt["prompt_ids"].size(), 150u);
  auto engine = open(tiny(), {1, 160, 64});
  Stream stream;
  engine->scheduler().submit(ids(prompt["prompt_ids"]), greedy(48), stream.callback());
  engine->scheduler().run_until_idle();
  EXPECT_EQ(stream.reason, FinishReason::kCapacity);
  EXPECT_EQ(stream.message, "context full: 160 of 160 positions used");
  ASSERT_EQ(stream.tokens.size(), 11u);
  const auto want = ids(prompt["output_ids"]);
  EXPECT_EQ(stream.tokens, std::vector<int32_t>(want.begin(), want.begin() + 11));
}

// ---------------------------------------------------------------------------------------------
// SmolLM2-135M-Instruct (the default model, Q4_1 GGUF dequantized to f32): the six reference
// prompts of 5 to 237 tokens, 48 greedy tokens each.

TEST_P(EngineOnRuntime, SmolLM2EveryBatchedStreamMatchesHf) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  auto engine = open(model, {4, 512, 64});
  auto [streams, widest] = run_staggered(engine->scheduler(), reference, 1);
  expect_streams_match(streams, reference, GetParam() + " SmolLM2 batched");
  EXPECT_GE(widest, 3) << "requests should have been decoded together";
}

TEST_P(EngineOnRuntime, SmolLM2TeacherForcedLogitsMatchHf) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  auto engine = open(model, {4, 512, 64}, true);
  const double diff = teacher_forced_max_diff(engine->executor(), reference, 1);
  std::printf("%s SmolLM2 slot 1: max |logit diff| vs HF %.3g (tolerance %.g)\n",
              GetParam().c_str(), diff, kLogitTolerance);
  EXPECT_LE(diff, kLogitTolerance);
}

// --math fast (IREE on AVX2): decode's products take activations rounded to 8 bits, each
// sequence's row alone, and so do prefill's on AVX-512 VNNI (SmolLM2's 576-column ones as a run
// of 512 and a tail group of 128, its 1536-column down projections as three runs; without VNNI
// prefill stays exact). Teacher-forced logits move away from HF's by more than float32 noise (the
// int8 products are in use) but stay close: the largest move is 1.67 here with both, 0.86 with
// decode's alone (XLACEL_CPU_ISA=avx2). (Rounding to 8 bits turns any change in the f32 order of a
// sum into different codes downstream, so the figure moves with such changes: 0.72 and 1.02 for
// two other, equally tested, tail layouts of prefill's; a wrong product moves logits by far
// more.) The greedy stream keeps HF's tokens at least while HF's top-2 margin exceeds twice that
// move (only a nearer tie can flip), and its first token, which HF gives a margin of 2.48.
TEST(FastMath, SmolLM2LogitsMoveLittleAndAConfidentAnswerStays) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  if (auto missing = missing_runtime("iree")) GTEST_SKIP() << *missing;
  const json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  const ModelFiles files = ModelFiles::open(model);
  device::DeviceOptions device;
  backends::Runtime opened = backends::open_runtime("iree", device, {});
  if (!opened.lowering->has_fast_math()) {
    GTEST_SKIP() << "no int8 planar kernel on this CPU (needs AVX2 and FMA)";
  }
  executor::ExecutorOptions options;
  options.weights = models::WeightType::kAuto;
  options.capacity = 512;
  options.math = lowering::Math::kFast;
  options.preload_logits = true;
  executor::Executor executor(std::move(opened.device), std::move(opened.lowering), files, options);
  const double diff = teacher_forced_max_diff(executor, reference, 0);
  std::printf("iree --math fast SmolLM2: max |logit diff| vs HF %.3g\n", diff);
  EXPECT_GT(diff, kLogitTolerance) << "the int8 products should move the logits";
  EXPECT_LT(diff, 3.0);

  Scheduler scheduler(executor, nullptr, {});
  json capital = reference;
  capital["prompts"] = json::array({reference["prompts"][0]});  // capital_raw: " Paris. ..."
  ASSERT_EQ(capital["prompts"][0]["name"], "capital_raw");
  auto [streams, widest] = run_staggered(scheduler, capital, 1);
  (void)widest;
  ASSERT_EQ(streams.size(), 1u);
  const auto want = ids(capital["prompts"][0]["output_ids"]);
  std::size_t confident = 0;  // steps before HF's first top-2 margin within 2 * diff
  for (const json& step : capital["prompts"][0]["steps"]) {
    if (step["top2_gap"].get<double>() <= 2 * diff) break;
    ++confident;
  }
  EXPECT_GE(matched(streams[0].tokens, want), std::max<std::size_t>(confident, 1))
      << "capital_raw under --math fast";
}

TEST_P(EngineOnRuntime, SmolLM2SeededSamplingDoesNotDependOnTheBatch) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  auto engine = open(model, {4, 512, 64}, true);
  const std::vector<int32_t> prompt = engine->text().encode_text("Once upon a time");
  RequestOptions sampled = greedy(24);
  sampled.sampling.temperature = 1.0f;
  sampled.sampling.top_k = 50;
  sampled.sampling.top_p = 0.95f;
  sampled.sampling.repeat_penalty = 1.1f;
  sampled.sampling.seed = 7;
  auto run = [&](int companions) {
    std::vector<Stream> others(static_cast<std::size_t>(companions));
    for (int i = 0; i < companions; ++i) {
      engine->scheduler().submit(engine->text().encode_text(i % 2 ? "The sea" : "In 1969, the"),
                                 greedy(20 + 3 * i),
                                 others[static_cast<std::size_t>(i)].callback());
    }
    Stream stream;
    engine->scheduler().submit(prompt, sampled, stream.callback());
    engine->scheduler().run_until_idle();
    return stream.tokens;
  };
  const std::vector<int32_t> alone = run(0);
  ASSERT_EQ(alone.size(), 24u);
  EXPECT_EQ(run(3), alone);
  sampled.sampling.seed = 8;
  EXPECT_NE(run(1), alone) << "another seed should sample differently";
}

// A chat's second turn on a slot that kept the first turn's prompt and reply, while another
// request decodes beside it (its idle row must not touch the kept rows), then that request's
// prompt again (all but its last token kept, in slot 1): every stream must equal the run that
// prefills every prompt in full.
TEST_P(EngineOnRuntime, SmolLM2PrefixReuseGivesTheTokensOfAFullPrefill) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  struct Run {
    std::vector<int32_t> first_prompt, second_prompt;
    Stream first, decoy, second, decoy_again;
  };
  auto run = [&](bool reuse) {
    auto engine = open(model, {2, 512, 64}, false, reuse);
    const ModelText& text = engine->text();
    Scheduler& scheduler = engine->scheduler();
    RequestOptions chat = engine->default_request();
    chat.max_tokens = 32;
    const std::vector<int32_t> decoy = text.encode_text("Once upon a time, in a quiet village,");
    Json messages = Json::array();
    messages.push_back({{"role", "user"}, {"content", "What is the capital of France?"}});
    Run r;
    r.first_prompt = text.encode_chat(messages, Json::object());
    scheduler.submit(r.first_prompt, chat, r.first.callback());  // slot 0
    scheduler.submit(decoy, greedy(64), r.decoy.callback());     // slot 1, outlives the first
    scheduler.run_until_idle();
    messages.push_back({{"role", "assistant"}, {"content", r.first.text}});
    messages.push_back({{"role", "user"}, {"content", "And what is the capital of Germany?"}});
    r.second_prompt = text.encode_chat(messages, Json::object());
    scheduler.submit(r.second_prompt, chat, r.second.callback());
    scheduler.submit(decoy, greedy(64), r.decoy_again.callback());
    scheduler.run_until_idle();
    return r;
  };
  const Run full = run(false);
  const Run reused = run(true);
  EXPECT_EQ(full.second.stats.cached_tokens, 0);
  EXPECT_EQ(full.decoy_again.stats.cached_tokens, 0);
  ASSERT_EQ(reused.second_prompt, full.second_prompt);
  EXPECT_EQ(reused.first.tokens, full.first.tokens);
  EXPECT_EQ(reused.decoy.tokens, full.decoy.tokens);
  EXPECT_EQ(reused.second.tokens, full.second.tokens)
      << "differs at token " << matched(reused.second.tokens, full.second.tokens);
  EXPECT_EQ(reused.decoy_again.tokens, full.decoy.tokens);
  // The second turn starts with the first prompt and its reply (the final <|im_end|> was never
  // fed, so it is not in the cache).
  EXPECT_GE(reused.second.stats.cached_tokens, static_cast<int64_t>(reused.first_prompt.size()));
  EXPECT_LT(reused.second.stats.cached_tokens, static_cast<int64_t>(reused.second_prompt.size()));
  EXPECT_EQ(reused.decoy_again.stats.cached_tokens, reused.decoy.stats.prompt_tokens - 1);
  std::printf("%s SmolLM2 second turn: %lld of %zu prompt tokens reused, reply \"%s\"\n",
              GetParam().c_str(), static_cast<long long>(reused.second.stats.cached_tokens),
              reused.second_prompt.size(), reused.second.text.c_str());
}

// ---------------------------------------------------------------------------------------------
// Sliding-window rings on the tiny Gemma 3 (window 24, layer 0 sliding, layer 1 full): the
// sliding layer keeps 24 rows per slot, which a 5-token prompt and 48 outputs wrap twice in
// decode and prompts of 70 and 150 tokens in chunks of 32 (longer than the ring) wrap in
// prefill; tokens and logits must still equal HF's.

TEST_P(EngineOnRuntime, SlidingLayersKeepARingOfTheWindowThatWrapsAndStillMatchHf) {
  const fs::path dir = testing::test_data("models/gemma3_text");
  const json reference = read_json(dir / "reference.json");
  auto engine = open(dir.string(), {2, 256, 32}, true);
  executor::Executor& executor = engine->executor();
  const ModelConfig& config = engine->model().config();
  ASSERT_EQ(config.sliding_window, 24);
  ASSERT_TRUE(config.is_sliding_layer(0));
  ASSERT_FALSE(config.is_sliding_layer(1));
  EXPECT_EQ(executor.capabilities().ring_rows, 24);
  // K and V, 2 slots, f32: the sliding layer's 24 rows and the full layer's 256.
  const auto row_bytes = static_cast<uint64_t>(2 * 2 * config.num_kv_heads * config.head_dim * 4);
  EXPECT_EQ(executor.load_report().cache_bytes, row_bytes * (24 + 256));

  const json& prompt = reference["prompts"][0];
  ASSERT_EQ(prompt["prompt_ids"].size(), 5u);
  Stream stream;
  engine->scheduler().submit(ids(prompt["prompt_ids"]), greedy(48), stream.callback());
  engine->scheduler().run_until_idle();
  EXPECT_EQ(stream.tokens, ids(prompt["output_ids"]))
      << "differs at token " << matched(stream.tokens, ids(prompt["output_ids"]));

  const double diff = teacher_forced_max_diff(executor, reference, 1);
  std::printf("%s gemma3_text ring slot 1: max |logit diff| vs HF %.3g (tolerance %.g)\n",
              GetParam().c_str(), diff, kLogitTolerance);
  EXPECT_LE(diff, kLogitTolerance);
}

// Prefix reuse on a wrapped ring: a chat-like follow-up that extends a slot's whole resident
// sequence reuses it; a prompt sharing only part of it is prefilled from position 0 over the
// ring's stale rows. Both must give the tokens of runs without reuse. The rings of sliding
// layers (tiny Gemma 3, 24 positions), of short convolutions (tiny LFM2, 3) and of Mamba-2's
// convolution and state (tiny Granite 4.0-H, 4 and 2).
class RingModelOnRuntime : public ::testing::TestWithParam<FamilyRuntime> {};

TEST_P(RingModelOnRuntime, AWrappedRingIsReusedOnlyWholeAndGivesTheTokensOfAFullPrefill) {
  const auto& [model, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/" + model);
  const json reference = read_json(dir / "reference.json");
  const auto first = ids(reference["prompts"][1]["prompt_ids"]);  // 17 tokens
  const auto decoy = ids(reference["prompts"][2]["prompt_ids"]);  // 70 tokens
  const auto tail = ids(reference["prompts"][0]["prompt_ids"]);   // 5 tokens
  struct Run {
    Stream first, decoy, extended, shorter;
    std::vector<int32_t> extended_prompt;
  };
  auto run = [&](bool reuse) {
    auto engine = open_on(runtime, dir.string(), {2, 256, 16}, false, reuse);
    Scheduler& scheduler = engine->scheduler();
    Run r;
    scheduler.submit(first, greedy(20), r.first.callback());  // 17 + 19 fed: 36 rows written
    scheduler.submit(decoy, greedy(40), r.decoy.callback());
    scheduler.run_until_idle();
    r.extended_prompt = first;
    r.extended_prompt.insert(r.extended_prompt.end(), r.first.tokens.begin(), r.first.tokens.end());
    r.extended_prompt.insert(r.extended_prompt.end(), tail.begin(), tail.end());
    scheduler.submit(r.extended_prompt, greedy(16), r.extended.callback());
    scheduler.run_until_idle();
    std::vector<int32_t> shorter(first.begin(), first.begin() + 10);
    shorter.insert(shorter.end(), tail.begin(), tail.end());
    scheduler.submit(shorter, greedy(16), r.shorter.callback());
    scheduler.run_until_idle();
    return r;
  };
  const Run full = run(false);
  const Run reused = run(true);
  EXPECT_EQ(reused.first.tokens, full.first.tokens);
  EXPECT_EQ(reused.decoy.tokens, full.decoy.tokens);
  EXPECT_EQ(reused.extended.stats.cached_tokens, 36);
  EXPECT_EQ(reused.extended.tokens, full.extended.tokens)
      << "differs at token " << matched(reused.extended.tokens, full.extended.tokens);
  EXPECT_EQ(reused.shorter.stats.cached_tokens, 0);
  EXPECT_EQ(reused.shorter.tokens, full.shorter.tokens)
      << "differs at token " << matched(reused.shorter.tokens, full.shorter.tokens);
}

// The choices of one request on a model with rings that the 70-token prompt wraps in prefill
// (tiny Gemma 3: 24 rows; tiny LFM2: 3): with their prompt prefilled once and its rows copied
// to the other slots (the copy-slot graph), each choice draws the tokens it draws when every
// choice prefills its own, and the greedy one HF's; the ring of a copy wraps again in decode.
// The prompt cache on models whose slots hold rings and recurrent state: a prompt whose one slot
// went to another request is saved to the host first, and its follow-up gets it restored (save-
// slot and restore-slot graphs) rather than prefilled, with the tokens of a run that prefills
// every prompt in full.
TEST_P(RingModelOnRuntime, APromptRestoredFromTheHostGivesTheTokensOfAFullPrefill) {
  const auto& [model, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/" + model);
  const json reference = read_json(dir / "reference.json");
  const auto agent = ids(reference["prompts"][2]["prompt_ids"]);  // 70 tokens
  const auto other = ids(reference["prompts"][1]["prompt_ids"]);  // 17 tokens
  const auto tail = ids(reference["prompts"][0]["prompt_ids"]);   // 5 tokens
  struct Run {
    Stream agent, other, again;
  };
  auto run = [&](bool cache) {
    auto engine = open_on(runtime, dir.string(), {1, 256, 16}, false, cache, true,
                          cache ? std::size_t{64} << 20 : 0);
    Scheduler& scheduler = engine->scheduler();
    Run r;
    scheduler.submit(agent, greedy(12), r.agent.callback());
    scheduler.run_until_idle();
    scheduler.submit(other, greedy(12), r.other.callback());  // takes the one slot
    scheduler.run_until_idle();
    std::vector<int32_t> again = agent;
    again.insert(again.end(), r.agent.tokens.begin(), r.agent.tokens.end());
    again.insert(again.end(), tail.begin(), tail.end());
    scheduler.submit(again, greedy(12), r.again.callback());
    scheduler.run_until_idle();
    if (cache) {
      EXPECT_EQ(scheduler.prompt_cache_hits(), 1);
    }
    return r;
  };
  const Run full = run(false);
  const Run cached = run(true);
  EXPECT_EQ(cached.again.stats.cached_tokens, 70 + 11);  // the prompt and the outputs fed back
  EXPECT_EQ(cached.other.tokens, full.other.tokens);
  EXPECT_EQ(cached.again.tokens, full.again.tokens)
      << "differs at token " << matched(cached.again.tokens, full.again.tokens);
}

TEST_P(RingModelOnRuntime, ChoicesSharingOnePrefillDrawWhatTheyDrawAlone) {
  const auto& [model, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/" + model);
  const json reference = read_json(dir / "reference.json");
  const json& prompt = reference["prompts"][2];
  ASSERT_EQ(prompt["prompt_ids"].size(), 70u);
  std::vector<RequestOptions> choices(3, greedy(30));
  for (std::size_t i = 1; i < choices.size(); ++i) {
    choices[i].sampling.temperature = 1.0f;
    choices[i].sampling.seed = 40 + i;
  }
  choices[2].sampling.logprobs = true;
  choices[2].sampling.top_logprobs = 3;
  auto run = [&](bool share) {
    auto engine = open_on(runtime, dir.string(), {4, 256, 32}, false, true, share);
    std::vector<Stream> streams(choices.size());
    engine->scheduler().submit_choices(ids(prompt["prompt_ids"]), choices,
                                       [&](std::size_t i) { return streams[i].callback(); });
    engine->scheduler().run_until_idle();
    return streams;
  };
  const std::vector<Stream> shared = run(true);
  const std::vector<Stream> alone = run(false);
  for (std::size_t i = 0; i < choices.size(); ++i) {
    EXPECT_EQ(shared[i].tokens, alone[i].tokens)
        << "choice " << i << " differs at token " << matched(shared[i].tokens, alone[i].tokens);
    EXPECT_EQ(shared[i].stats.cached_tokens, i == 0 ? 0 : 70) << "choice " << i;
  }
  const std::vector<int32_t> want = ids(prompt["output_ids"]);
  const std::size_t compared = std::min(want.size(), shared[0].tokens.size());
  EXPECT_EQ(std::vector<int32_t>(shared[0].tokens.begin(), shared[0].tokens.begin() + compared),
            std::vector<int32_t>(want.begin(), want.begin() + compared));
  EXPECT_NE(shared[1].tokens, shared[2].tokens);
}

// The last chunks of four prompts in one prefill call, each in its own slot at its own start
// (after its leading chunks ran alone), give each the logits its last chunk gives alone in
// another slot, and HF's first-token logits; and greedy requests submitted together, whose
// prompts prefill together, get HF's tokens. A full cache (tiny Llama 3), sliding layers'
// rings (tiny Gemma 3), short convolutions' (tiny LFM2) and Mamba-2's states (tiny Granite
// 4.0-H).
TEST_P(EngineOnRuntime, ChunksPrefilledTogetherGiveWhatTheyGiveAlone) {
  const fs::path models[] = {
      testing::test_data("models/tiny_llama3"), testing::test_data("models/gemma3_text"),
      testing::test_data("models/lfm2"), testing::test_data("models/granitemoehybrid")};
  for (const fs::path& model : models) {
    const std::string label = GetParam() + " " + model.filename().string();
    const json reference = read_json(model.filename() == "tiny_llama3"
                                         ? testing::test_data("models/tiny_llama3_reference.json")
                                         : model / "reference.json");
    auto engine = open(model.string(),
                       {.slots = 8,
                        .capacity = 256,
                        .prefill_bucket = 16,
                        .small_prefill_bucket = 8,
                        .prefill_sequences = 4},
                       true);
    executor::Executor& executor = engine->executor();
    ASSERT_EQ(executor.capabilities().prefill_sequences, 4);
    std::vector<std::vector<int32_t>> tails(4);
    std::vector<executor::PrefillInput> together;
    std::vector<executor::PrefillOutput> alone(4), joint(4);
    for (std::size_t i = 0; i < 4; ++i) {
      const auto prompt = ids(reference["prompts"][i]["prompt_ids"]);
      const auto total = static_cast<int32_t>(prompt.size());
      const int32_t tail_start = (total - 1) / 16 * 16;  // 5, 17, 70, 150: tails of 5, 1, 6, 6
      ASSERT_LE(total - tail_start, 8) << label;
      const auto slot = static_cast<int32_t>(3 - i);  // slots in another order than the chunks
      for (int32_t start = 0; start < tail_start; start += 16) {
        std::vector<int32_t> chunk(prompt.begin() + start, prompt.begin() + start + 16);
        executor::PrefillOutput ignored;
        for (int32_t s : {slot, slot + 4})
          executor.prefill_chunk(s, chunk, start, 16, false, ignored);
      }
      tails[i].assign(8, 0);
      std::copy(prompt.begin() + tail_start, prompt.end(), tails[i].begin());
      executor.prefill_chunk(slot + 4, tails[i], tail_start, total - tail_start, true, alone[i]);
      together.push_back({slot, tails[i], tail_start, total - tail_start, {}});
    }
    executor.prefill_chunks(together, true, joint);
    for (std::size_t i = 0; i < 4; ++i) {
      double apart = 0, hf = 0;
      for (std::size_t v = 0; v < alone[i].logits.size(); ++v) {
        apart = std::max(apart, double{std::abs(alone[i].logits[v] - joint[i].logits[v])});
      }
      const json& top = reference["prompts"][i]["steps"][0]["top"];
      const auto top_ids = top["ids"].get<std::vector<int64_t>>();
      const auto values = top["values"].get<std::vector<double>>();
      for (std::size_t t = 0; t < top_ids.size(); ++t) {
        hf = std::max(hf,
                      std::abs(values[t] - joint[i].logits[static_cast<std::size_t>(top_ids[t])]));
      }
      std::printf("%s prompt %zu: together vs alone max |logit diff| %.3g, vs HF %.3g\n",
                  label.c_str(), i, apart, hf);
      EXPECT_EQ(joint[i].token, alone[i].token) << label << " prompt " << i;
      EXPECT_LE(apart, 1e-5) << label << " prompt " << i;
      EXPECT_LE(hf, kLogitTolerance) << label << " prompt " << i;
    }

    // Requests submitted together prefill together, in chunks of the small bucket: three in the
    // graph over four sequences, whose fourth is padding that must write nothing (a copy of
    // the first chunk that wrote its rows again broke the ring's rows from the second chunk on).
    Scheduler& scheduler = engine->scheduler();
    std::vector<Stream> streams(3);
    const std::size_t prompt_of[] = {2, 2, 2};  // 70 tokens: chunks of 8 at 0, 8, 16, ...
    for (std::size_t r = 0; r < streams.size(); ++r) {
      const json& prompt = reference["prompts"][prompt_of[r]];
      scheduler.submit(ids(prompt["prompt_ids"]), greedy(static_cast<int64_t>(20 + r)),
                       streams[r].callback());
    }
    int64_t most = 0;
    while (scheduler.step()) most = std::max(most, scheduler.last_step().prefill_sequences);
    EXPECT_EQ(most, 3) << label << ": the three prompts should prefill together";
    for (std::size_t r = 0; r < streams.size(); ++r) {
      const auto want_all = ids(reference["prompts"][prompt_of[r]]["output_ids"]);
      const std::vector<int32_t> want(want_all.begin(),
                                      want_all.begin() + 20 + static_cast<std::ptrdiff_t>(r));
      EXPECT_EQ(streams[r].tokens, want)
          << label << " request " << r << " differs at token " << matched(streams[r].tokens, want);
    }
  }
}

// A vision-language model's greedy tokens with an image in the prompt are HF's: the vision tower
// runs before the prompt's first chunk and its features take the image tokens' rows, alone and
// with both prompts batched. Idefics3's image tokens are split over two chunks (8-token buckets);
// Gemma 3's attend to each other (HF's token_type_ids mask), so each image's 16 go in one chunk
// of 16, the chunk before ending where they start. A request whose images and image tokens
// disagree is refused by name, as are images for a text-only model.
TEST_P(EngineOnRuntime, VisionLanguageModelsWithAnImageMatchHf) {
  for (const auto& [name, bucket] : {std::pair<std::string, int64_t>{"idefics3_tiny", 8},
                                     std::pair<std::string, int64_t>{"gemma3_vision_tiny", 16}}) {
    const fs::path model = testing::test_data("models/" + name);
    const json reference = read_json(model / "vision_reference.json");
    const json& images = reference["images"];
    const auto pixels_per_image = static_cast<std::size_t>(images["shape"][1].get<int64_t>() *
                                                           images["shape"][2].get<int64_t>() *
                                                           images["shape"][3].get<int64_t>());
    const std::vector<float> all_pixels = images["pixel_values"].get<std::vector<float>>();
    auto image = [&](std::size_t index) {
      const auto first = all_pixels.begin() + static_cast<std::ptrdiff_t>(index * pixels_per_image);
      return std::make_shared<const std::vector<float>>(
          first, first + static_cast<std::ptrdiff_t>(pixels_per_image));
    };
    auto engine = open(model.string(), {2, 64, bucket, bucket, 1});
    Scheduler& scheduler = engine->scheduler();
    for (int batched = 0; batched < 2; ++batched) {
      std::vector<Stream> streams(reference["generation"].size());
      for (std::size_t i = 0; i < streams.size(); ++i) {
        const json& generation = reference["generation"][i];
        RequestOptions options = greedy(static_cast<int64_t>(generation["output_ids"].size()));
        options.image_pixels = image(generation["image"].get<std::size_t>());
        scheduler.submit(ids(generation["prompt_ids"]), options, streams[i].callback());
        if (batched == 0) scheduler.run_until_idle();
      }
      scheduler.run_until_idle();
      for (std::size_t i = 0; i < streams.size(); ++i) {
        const json& generation = reference["generation"][i];
        const auto want = ids(generation["output_ids"]);
        EXPECT_EQ(streams[i].tokens, want)
            << GetParam() << " " << name << (batched ? " batched " : " alone ")
            << generation["name"] << ": differs at token " << matched(streams[i].tokens, want);
      }
    }
    if (name != "idefics3_tiny") continue;

    const std::vector<int32_t> prompt = ids(reference["generation"][0]["prompt_ids"]);
    testing::expect_error([&] { scheduler.submit(prompt, greedy(4), [](const TokenEvent&) {}); },
                          "prompt: has 4 image tokens (id 299) but the request has no images");
    RequestOptions two_images = greedy(4);
    two_images.image_pixels = std::make_shared<const std::vector<float>>(2 * pixels_per_image);
    testing::expect_error([&] { scheduler.submit(prompt, two_images, [](const TokenEvent&) {}); },
                          "images: 2 images need 8 image tokens in the prompt, which has 4");
    RequestOptions ragged = greedy(4);
    ragged.image_pixels = std::make_shared<const std::vector<float>>(pixels_per_image + 1);
    testing::expect_error(
        [&] { scheduler.submit(prompt, ragged, [](const TokenEvent&) {}); },
        fmt::format("images: {} pixel values are not a whole number of images of {}",
                    pixels_per_image + 1, pixels_per_image));

    auto text_only = open(tiny(), {1, 64, 8});
    RequestOptions with_image = greedy(4);
    with_image.image_pixels = image(0);
    testing::expect_error(
        [&] {
          text_only->scheduler().submit({1, 2, 3}, with_image, [](const TokenEvent&) {});
        },
        "images: the model has no vision tower: it reads text only");
  }
}

// A chat's images stay in its slot: the next turn reuses their rows (its prompt holds them
// again, the same pixels) and encodes no image, and its reply is what a prefill of the whole
// conversation gives. The same text with another image reuses nothing past that image's first
// row.
TEST_P(EngineOnRuntime, AChatsImagesAreReusedByTheNextTurnNotAnotherImage) {
  const fs::path model = testing::test_data("models/smolvlm_tiny");
  ModelFiles files = ModelFiles::open(model.string());
  const ModelImages images(files);
  auto prepared = [&](const std::string& name) {
    const ImageFile file = read_image_file(testing::test_data("images/" + name).string());
    return images.prepare(std::span(&file, 1));
  };
  RequestOptions request = greedy(6);
  std::vector<std::vector<int32_t>> replies;
  std::vector<ChatTurn> turns;
  for (bool reuse : {true, false}) {
    auto engine = open(model.string(), {1, 512, 64, 16, 1}, false, reuse);
    Conversation chat(engine->text(), "");
    turns.push_back(
        chat.reply(engine->scheduler(), "What is it?", request, {}, prepared("rgb_37x23.png")));
    turns.push_back(chat.reply(engine->scheduler(), "Say more.", request, {}));
    if (reuse) {
      const std::vector<int32_t>& second = turns.back().prompt_ids;
      const auto last_image_row = std::find(second.rbegin(), second.rend(), 5) - second.rbegin();
      EXPECT_GE(turns.back().stats.cached_tokens,
                static_cast<int64_t>(second.size()) - last_image_row)
          << "the second turn should reuse the first turn's image rows";
      // Another image in the same place: its rows differ, so they are prefilled.
      ChatTurn other =
          Conversation(engine->text(), "")
              .reply(engine->scheduler(), "What is it?", request, {}, prepared("rgb_64x64.png"));
      const auto first_image_row =
          std::find(other.prompt_ids.begin(), other.prompt_ids.end(), 5) - other.prompt_ids.begin();
      EXPECT_LE(other.stats.cached_tokens, first_image_row);
      std::printf(
          "%s: turn 2 reused %lld of %zu rows; another image reused %lld (first image row "
          "%lld)\n",
          GetParam().c_str(), static_cast<long long>(turns.back().stats.cached_tokens),
          second.size(), static_cast<long long>(other.stats.cached_tokens),
          static_cast<long long>(first_image_row));
    }
  }
  EXPECT_EQ(turns[0].output_ids, turns[2].output_ids);
  EXPECT_EQ(turns[1].output_ids, turns[3].output_ids) << "the reused turn differs";
}

INSTANTIATE_TEST_SUITE_P(Runtimes, EngineOnRuntime, ::testing::Values("iree", "xla"),
                         [](const auto& param_info) { return param_info.param; });

INSTANTIATE_TEST_SUITE_P(
    Rings, RingModelOnRuntime,
    ::testing::Combine(::testing::Values(std::string("gemma3_text"), std::string("lfm2"),
                                         std::string("granitemoehybrid")),
                       ::testing::Values(std::string("iree"), std::string("xla"))),
    family_runtime_name);

// ---------------------------------------------------------------------------------------------
// A tiny model against its reference: the greedy streams of its id-list prompts, each joining and
// leaving at its own step, equal HF's; teacher-forced logits in slot min(1, slots - 1) lie within
// kLogitTolerance; and the CLI's greedy path, `generate --prompt-ids` on the 17-token prompt with
// the default --weights auto, gives HF's tokens too (unless `cli` is off).

struct TinyModelRun {
  std::string runtime;
  std::string name;  // in labels and scratch folders
  models::WeightType weights = models::WeightType::kF32;
  int64_t slots = 4;
  int copies = 2;  // submissions of each prompt
  bool cli = true;
};

// What a run's executor loaded.
struct TinyModelLoad {
  executor::LoadReport report;
  bool planar_kernel = false;  // the lowering has one (it reads 4-bit codes in row pairs)
};

TinyModelLoad expect_tiny_model_matches_hf(const fs::path& model, const json& reference,
                                           const TinyModelRun& run) {
  const std::string label = run.runtime + " " + run.name;
  EngineOptions options;
  options.runtime = run.runtime;
  options.executor.weights = run.weights;
  options.executor.slots = run.slots;
  options.executor.capacity = 256;
  options.executor.prefill_bucket = 16;
  options.executor.preload_logits = true;
  Engine engine(ModelFiles::open(model.string()), options);
  auto [streams, widest] = run_staggered(engine.scheduler(), reference, run.copies);
  expect_streams_match(streams, reference, label);
  if (run.slots > 1) {
    EXPECT_GE(widest, 3) << "requests should have been decoded together";
  }
  const int32_t slot = run.slots > 1 ? 1 : 0;
  const double diff = teacher_forced_max_diff(engine.executor(), reference, slot);
  std::printf("%s slot %d: max |logit diff| vs HF %.3g (tolerance %.g)\n", label.c_str(), slot,
              diff, kLogitTolerance);
  EXPECT_LE(diff, kLogitTolerance);
  const TinyModelLoad load{engine.executor().load_report(),
                           engine.executor().lowering().pairs_code_rows()};
  if (!run.cli) return load;

  const json& prompt = reference["prompts"][1];
  std::string prompt_ids;
  for (int32_t id : ids(prompt["prompt_ids"])) prompt_ids += std::to_string(id) + " ";
  const auto want = ids(prompt["output_ids"]);
  const testing::ProgramRun cli =
      testing::run_xlacel(testing::scratch_dir("engine/cli-" + run.name + "-" + run.runtime),
                          {"generate", "-m", model.string(), "--prompt-ids", prompt_ids, "-n",
                           std::to_string(want.size()), "--ignore-eos", "--backend", run.runtime,
                           "--output-format", "json"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  if (cli.exit_code != 0) return load;
  const auto got = ids(json::parse(cli.out)["output_ids"]);
  EXPECT_EQ(got, want) << "CLI differs at token " << matched(got, want);
  std::printf("%s CLI generate %s: %zu/%zu tokens match HF\n", label.c_str(),
              prompt["name"].get<std::string>().c_str(), matched(got, want), want.size());
  return load;
}

// Every model family on its tiny random-weight model (tests/data/models/<type>/, written with
// its tokenizer, real chat template and reference.json by tools/reference/families.py): the
// prompt ids of its raw-text and chat prompts equal HF's (tokenizer, apply_chat_template); the
// batched greedy streams of all its prompts (4 id lists of 5 to 150 tokens, the raw text, the
// chats; twice each, joining and leaving) equal HF's, and teacher-forced logits in slot 1 lie
// within kLogitTolerance; the CLI generates the same from ids, text and messages. Adding a
// family = one line in kFamilies.

const std::vector<std::string> kFamilies = {
    "qwen3",    "gemma3_text",   "gemma2", "granite",    "olmo2",   "phi3",
    "stablelm", "starcoder2",    "cohere", "qwen3_moe",  "olmoe",   "mixtral",
    "smollm3",  "phi3_longrope", "lfm2",   "qwen3_yarn", "gpt_oss", "granitemoehybrid",
};

// ARM machines (Graviton, Ampere, Grace, Apple silicon under Linux): IREE cross-compiles every
// family's decode graph, and tiny Llama 3's prefill, for aarch64 (`xlacel compile --target-triple
// aarch64-linux-gnu --cpu generic`): the graphs as a CPU without x86's hand-written kernels runs
// them (the portable StableHLO products), each module holding aarch64 code only. Running them needs
// an aarch64 machine (or qemu-user and an aarch64 IREE runtime), which this test does not have.
TEST(CrossCompile, EveryFamilysDecodeGraphCompilesForAarch64) {
  if (auto missing = missing_runtime("iree")) GTEST_SKIP() << *missing;
  compile_cache::IreeTargetOptions aarch64_options;
  aarch64_options.triple = "aarch64-linux-gnu";
  aarch64_options.cpu = "generic";
  const compile_cache::CompileTarget aarch64 = compile_cache::iree_target(aarch64_options);
  compile_cache::IreeCompiler compiler = compile_cache::IreeCompiler::from_environment();
  compile_cache::CompileCache cache;
  std::vector<std::pair<std::string, models::GraphOptions>> graphs;
  for (const std::string& family : kFamilies) {
    graphs.push_back({family, {.kind = models::GraphKind::kDecode, .bucket = 1}});
  }
  graphs.push_back({"tiny_llama3", {.kind = models::GraphKind::kPrefill, .bucket = 16}});
  for (auto& [family, graph] : graphs) {
    graph.weights = models::WeightType::kAuto;
    const ModelFiles model = ModelFiles::open(testing::test_data("models/" + family).string());
    const std::string mlir =
        models::architecture_for(model.config(), model.path()).emit(model.config(), graph).mlir;
    const std::string source = fmt::format("{}.{}.mlir", family, models::graph_name(graph));
    compile_cache::CompileResult result;
    try {
      result = cache.get_or_compile(compiler, {mlir, source + " (aarch64)", aarch64});
    } catch (const Error& e) {
      ADD_FAILURE() << source << ": " << e.what();
      continue;
    }
    // The embedded ELF executables' machine (e_machine, little-endian at byte 18): AArch64's 183.
    const std::string module = testing::read_file(result.artifact);
    constexpr std::string_view kElfMagic = "\177ELF";
    std::set<int> machines;
    for (std::size_t at = module.find(kElfMagic);
         at != std::string::npos && at + 20 <= module.size(); at = module.find(kElfMagic, at + 4)) {
      machines.insert(static_cast<unsigned char>(module[at + 18]) |
                      static_cast<unsigned char>(module[at + 19]) << 8);
    }
    EXPECT_EQ(machines, std::set<int>{183}) << source;
  }
}

// Four slots, so that requests are decoded together, and logits on the host for teacher forcing.
EngineOptions family_engine_options(const std::string& runtime) {
  EngineOptions options;
  options.runtime = runtime;
  options.executor.slots = 4;
  options.executor.capacity = 512;  // families.py's CAPACITY
  options.executor.prefill_bucket = 16;
  options.executor.preload_logits = true;
  options.executor.verify_tokens = 8;  // for expect_speculation_matches
  return options;
}

// Every reference prompt twice, batched and staggered, against HF's tokens, without and with
// speculative decoding; teacher-forced logits in slot 1 within kLogitTolerance.
void expect_batched_greedy_and_logits_match(Engine& engine, const json& reference,
                                            const std::string& label) {
  auto [streams, widest] = run_staggered(engine.scheduler(), reference, 2);
  expect_streams_match(streams, reference, label);
  EXPECT_GE(widest, 3) << "requests should have been decoded together";
  // Once each, batched: the CLI's runs of these models speculate alone (its default).
  if (engine.executor().capabilities().verify_tokens > 0) {
    expect_speculation_matches(engine.executor(), reference, label, 1, false);
  }
  const double diff = teacher_forced_max_diff(engine.executor(), reference, 1);
  std::printf("%s slot 1: max |logit diff| vs HF %.3g (tolerance %.g)\n", label.c_str(), diff,
              kLogitTolerance);
  EXPECT_LE(diff, kLogitTolerance);
}

class FamilyTest : public ::testing::TestWithParam<FamilyRuntime> {};

TEST_P(FamilyTest, TinyModelGreedyAndLogitsMatchHf) {
  const auto& [family, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/" + family);
  const json reference = read_json(dir / "reference.json");
  Engine engine(ModelFiles::open(dir.string()), family_engine_options(runtime));
  int text_prompts = 0;
  for (const json& prompt : reference["prompts"]) {
    const std::string label = runtime + " " + family + " " + prompt["name"].get<std::string>();
    if (prompt["kind"] == "raw") {
      EXPECT_EQ(engine.text().encode_text(prompt["text"].get<std::string>()),
                ids(prompt["prompt_ids"]))
          << label;
    } else if (prompt["kind"] == "chat") {
      EXPECT_EQ(engine.text().render_chat(prompt["messages"], Json::object(), true),
                prompt["text"].get<std::string>())
          << label;
      EXPECT_EQ(engine.text().encode_chat(prompt["messages"], Json::object()),
                ids(prompt["prompt_ids"]))
          << label;
    } else {
      continue;
    }
    ++text_prompts;
  }
  const bool has_template =
      read_json(dir / "tokenizer_config.json").contains("chat_template");  // SmolLM3's has none
  EXPECT_GE(text_prompts, has_template ? 3 : 1) << "a raw prompt, and chats where a template is";
  expect_batched_greedy_and_logits_match(engine, reference, runtime + " " + family);

  // The CLI's greedy path: `generate` from the 17-token id list, the raw text and the first chat.
  const fs::path scratch = testing::scratch_dir("engine/cli-" + family + "-" + runtime);
  for (const json& prompt : reference["prompts"]) {
    const std::string name = prompt["name"];
    std::vector<std::string> args = {"generate",        "-m",   dir.string(),  "--backend", runtime,
                                     "--output-format", "json", "--ignore-eos"};
    if (name == "random_17") {
      std::string prompt_ids;
      for (int32_t id : ids(prompt["prompt_ids"])) prompt_ids += std::to_string(id) + " ";
      args.insert(args.end(), {"--prompt-ids", prompt_ids});
    } else if (prompt["kind"] == "raw") {
      args.insert(args.end(), {"-p", prompt["text"].get<std::string>()});
    } else if (name == "capital_chat") {
      const fs::path messages = scratch / "messages.json";
      std::ofstream(messages) << prompt["messages"].dump();
      args.insert(args.end(), {"--messages", messages.string()});
    } else {
      continue;
    }
    const auto want = ids(prompt["output_ids"]);
    args.insert(args.end(), {"-n", std::to_string(want.size())});
    const testing::ProgramRun run = testing::run_xlacel(scratch, args);
    ASSERT_EQ(run.exit_code, 0) << name << ": " << run.err;
    const json out = json::parse(run.out);
    EXPECT_EQ(ids(out["prompt_ids"]), ids(prompt["prompt_ids"])) << name;
    const auto got = ids(out["output_ids"]);
    EXPECT_EQ(got, want) << name << ": CLI differs at token " << matched(got, want);
    std::printf("%s %s CLI generate %s: %zu/%zu tokens match HF\n", runtime.c_str(), family.c_str(),
                name.c_str(), matched(got, want), want.size());
  }
}

// Every GGUF format --weights auto keeps resident as it is stored, on a tiny Llama written in
// that format (tests/data/models/tiny_quantized/<type>.gguf, HF's greedy references in
// <type>.json, both by tools/reference/quantized_gguf.py). One slot, so that on IREE CPU prefill
// and decode both read the planes (or the f16/bf16 values) in the graph; XLA reads their f32 copy
// dequantized on the host. The control runs one K-quant with --weights f32 (the engine only: the
// CLI's default is auto, which the other runs cover).

const std::vector<std::string> kResidentFormats = {
    "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "f16", "bf16",
};

using FormatRuntime = std::tuple<std::string, std::string, models::WeightType>;
class QuantizedGgufTest : public ::testing::TestWithParam<FormatRuntime> {};

TEST_P(QuantizedGgufTest, GreedyAndLogitsMatchHf) {
  const auto& [format, runtime, weights] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/tiny_quantized");
  const bool control = weights != models::WeightType::kAuto;
  const std::string name = format + "-" + models::weight_type_name(weights);
  const auto [report, planar_kernel] =
      expect_tiny_model_matches_hf(dir / (format + ".gguf"), read_json(dir / (format + ".json")),
                                   {runtime, name, weights, 1, 1, !control});
  // The file's own f16/bf16 matrices, which only IREE's hand-written kernel reads, are used where
  // the file holds them, 32 bytes off the 64-byte boundary compiled code assumes
  // (lowering::Readers).
  const bool wide = format == "f16" || format == "bf16";
  if (wide && runtime == "iree" && !control && planar_kernel) {
    EXPECT_GT(report.file_bytes_in_place, 0u) << name;
  }
  std::printf("%s %s: %llu of %llu weight bytes the file's own, used in place\n", runtime.c_str(),
              name.c_str(), static_cast<unsigned long long>(report.file_bytes_in_place),
              static_cast<unsigned long long>(report.weight_bytes));
}

// Gemma 3 270M (base, Q4_K_M GGUF dequantized to f32; tests/data/models/gemma3_270m_reference.json
// by tools/reference/gemma3_270m.py): 5 raw prompts as HF's token ids, 48 greedy tokens each,
// batched. Runs the executor and scheduler without a tokenizer, so it does not depend on
// xlacel tokenizing Gemma text.
TEST_P(EngineOnRuntime, Gemma3_270mEveryBatchedStreamMatchesHf) {
  const fs::path path = testing::gemma_model_path();
  if (!fs::exists(path)) GTEST_SKIP() << "Gemma 3 270M not found at " << path;
  const json reference = read_json(testing::test_data("models/gemma3_270m_reference.json"));
  const ModelFiles model = ModelFiles::open(path.string());
  device::DeviceOptions device;
  executor::ExecutorOptions options;
  options.slots = 4;
  options.capacity = 512;
  options.prefill_bucket = 64;
  options.preload_logits = true;
  backends::Runtime runtime = backends::open_runtime(GetParam(), device, {});
  executor::Executor executor(std::move(runtime.device), std::move(runtime.lowering), model,
                              options);
  Scheduler scheduler(executor, nullptr, {});
  auto [streams, widest] = run_staggered(scheduler, reference, 1);
  expect_streams_match(streams, reference, GetParam() + " gemma3-270m batched");
  EXPECT_GE(widest, 3) << "requests should have been decoded together";
  const double diff = teacher_forced_max_diff(executor, reference, 1);
  std::printf("%s gemma3-270m slot 1: max |logit diff| vs HF %.3g (tolerance %.g)\n",
              GetParam().c_str(), diff, kLogitTolerance);
  EXPECT_LE(diff, kLogitTolerance);
}

// ---------------------------------------------------------------------------------------------
// Tensor parallelism: XLA's SPMD partitioner runs each graph over N CPU devices of this process
// (the registry's shardings on its arguments: models/tensor_parallel.h). Every family's tiny
// model has 4 query heads and 2 KV heads, so N = 2 splits both and N = 4 replicates K/V and
// splits only the queries; its batched greedy streams must equal HF's and teacher-forced logits
// lie within kLogitTolerance (the all-reduce sums each layer's partial products in another order,
// float32 noise like any other). With N = 2 the CLI, `generate --tensor-parallel 2` from the
// 17-token id list, gives HF's tokens too.

using FamilyParts = std::tuple<std::string, int>;
class TensorParallelFamilyTest : public ::testing::TestWithParam<FamilyParts> {};

EngineOptions tensor_parallel_options(int parts, int64_t slots, int64_t capacity,
                                      int64_t prefill_bucket) {
  EngineOptions options;
  options.runtime = "xla";
  options.device.tensor_parallel = parts;
  options.executor.slots = slots;
  options.executor.capacity = capacity;
  options.executor.prefill_bucket = prefill_bucket;
  options.executor.preload_logits = true;
  options.executor.verify_tokens = 8;  // speculative decoding over the devices too
  return options;
}

TEST_P(TensorParallelFamilyTest, TinyModelGreedyAndLogitsMatchHf) {
  const auto& [family, parts] = GetParam();
  if (auto missing = missing_runtime("xla")) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/" + family);
  const json reference = read_json(dir / "reference.json");
  const std::string label = fmt::format("xla tp{} {}", parts, family);
  Engine engine(ModelFiles::open(dir.string()), tensor_parallel_options(parts, 4, 512, 16));
  const std::string& device = engine.executor().capabilities().device;
  EXPECT_NE(device.find(fmt::format("tensor parallel over {} devices", parts)), std::string::npos)
      << device;
  expect_batched_greedy_and_logits_match(engine, reference, label);
  if (parts != 2) return;

  for (const json& prompt : reference["prompts"]) {
    if (prompt["name"] != "random_17") continue;
    std::string prompt_ids;
    for (int32_t id : ids(prompt["prompt_ids"])) prompt_ids += std::to_string(id) + " ";
    const auto want = ids(prompt["output_ids"]);
    const testing::ProgramRun run = testing::run_xlacel(
        testing::scratch_dir("engine/cli-tp-" + family),
        {"generate", "-m", dir.string(), "--backend", "xla", "--tensor-parallel", "2",
         "--prompt-ids", prompt_ids, "-n", std::to_string(want.size()), "--ignore-eos",
         "--output-format", "json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto got = ids(json::parse(run.out)["output_ids"]);
    EXPECT_EQ(got, want) << "CLI differs at token " << matched(got, want);
    std::printf("%s CLI generate random_17: %zu/%zu tokens match HF\n", label.c_str(),
                matched(got, want), want.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TensorParallelFamilyTest,
                         ::testing::Combine(::testing::ValuesIn(kFamilies),
                                            ::testing::Values(2, 4)),
                         [](const auto& param_info) {
                           return fmt::format("{}_tp{}", std::get<0>(param_info.param),
                                              std::get<1>(param_info.param));
                         });

// Over 2 devices, a stream's tokens do not depend on what else is batched: each tiny Llama 3
// reference prompt alone in one slot, then all batched in 4, both equal HF's.
TEST(TensorParallel, TinyLlama3AloneAndBatchedOnTwoDevicesMatchHf) {
  if (auto missing = missing_runtime("xla")) GTEST_SKIP() << *missing;
  const json reference = read_json(testing::test_data("models/tiny_llama3_reference.json"));
  const std::string model = testing::test_data("models/tiny_llama3").string();
  for (int64_t slots : {1, 4}) {
    Engine engine(ModelFiles::open(model), tensor_parallel_options(2, slots, 256, 16));
    auto [streams, widest] = run_staggered(engine.scheduler(), reference, slots == 1 ? 1 : 2);
    expect_streams_match(streams, reference,
                         fmt::format("xla tp2 tiny {}", slots == 1 ? "alone" : "batched"));
    if (slots > 1) {
      EXPECT_GE(widest, 3) << "requests should have been decoded together";
    }
  }
  // Three choices of the first prompt share its prefill (a copy-slot graph over both devices'
  // halves of the cache): each greedy choice is HF's stream.
  Engine engine(ModelFiles::open(model), tensor_parallel_options(2, 4, 256, 16));
  const json& prompt = reference["prompts"][0];
  const std::vector<int32_t> want = ids(prompt["output_ids"]);
  std::vector<Stream> choices(3);
  engine.scheduler().submit_choices(
      ids(prompt["prompt_ids"]),
      std::vector<RequestOptions>(3, greedy(static_cast<int64_t>(want.size()))),
      [&](std::size_t i) { return choices[i].callback(); });
  engine.scheduler().run_until_idle();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    EXPECT_EQ(choices[i].tokens, want) << "choice " << i;
    EXPECT_EQ(choices[i].stats.cached_tokens, i == 0 ? 0 : choices[i].stats.prompt_tokens);
  }
}

// The default model (SmolLM2-135M: 9 query heads, 3 KV heads) over 3 devices, which split both:
// its six reference prompts batched, 48 greedy tokens each, token for token HF's.
TEST(TensorParallel, SmolLM2OnThreeDevicesMatchesHf) {
  if (auto missing = missing_runtime("xla")) GTEST_SKIP() << *missing;
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  Engine engine(ModelFiles::open(model), tensor_parallel_options(3, 4, 512, 64));
  auto [streams, widest] = run_staggered(engine.scheduler(), reference, 1);
  expect_streams_match(streams, reference, "xla tp3 SmolLM2 batched");
  EXPECT_GE(widest, 3) << "requests should have been decoded together";
}

// Where the query heads do not divide the devices, and on IREE (no SPMD partitioner), one line
// says why: the library's Error and the CLI's.
TEST(TensorParallel, HeadsThatDoNotDivideAndIreeAreOneLineErrors) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const fs::path scratch = testing::scratch_dir("engine/cli-tp-errors");
  const testing::ProgramRun two = testing::run_xlacel(
      scratch, {"generate", "-m", model, "--backend", "xla", "--tensor-parallel", "2", "-p", "Hi"});
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.err.find("--tensor-parallel: the model's 9 query heads (3 KV heads) do not "
                         "divide over 2 devices"),
            std::string::npos)
      << two.err;
  EXPECT_NE(two.err.find("1, 3, 9"), std::string::npos) << two.err;
  const testing::ProgramRun iree = testing::run_xlacel(
      scratch,
      {"generate", "-m", model, "--backend", "iree", "--tensor-parallel", "3", "-p", "Hi"});
  EXPECT_EQ(iree.exit_code, 1);
  EXPECT_NE(
      iree.err.find("--tensor-parallel: 3 needs the xla runtime: iree has no SPMD partitioner"),
      std::string::npos)
      << iree.err;
  for (const auto* run : {&two, &iree}) {
    EXPECT_EQ(std::count(run->err.begin(), run->err.end(), '\n'), 1) << run->err;
  }
  // The library itself: IREE refuses more than one device, naming what to use.
  device::DeviceOptions options;
  options.tensor_parallel = 2;
  try {
    backends::open_device("iree", options, {});
    ADD_FAILURE() << "iree opened a device of 2 partitions";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("SPMD partitioner"), std::string::npos) << message;
    EXPECT_TRUE(message.starts_with("tensor_parallel: 2 needs the xla runtime")) << message;
  }
}

// A family's tiny model as the pinned llama.cpp's converter writes it
// (tests/data/models/converted/<type>.gguf, tools/reference/converted_gguf.py): its id-list
// prompts give HF's greedy tokens and logits from the GGUF route too (q/k rows as the converter
// permutes them, keys as it names them), on both runtimes.
const std::vector<std::string> kConvertedFamilies = {
    "smollm3", "phi3_longrope", "lfm2", "qwen3_yarn", "gpt_oss", "granitemoehybrid"};

class ConvertedGgufTest : public ::testing::TestWithParam<FamilyRuntime> {};

TEST_P(ConvertedGgufTest, TinyModelGreedyAndLogitsMatchHf) {
  const auto& [family, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  json reference = read_json(testing::test_data("models/" + family) / "reference.json");
  json id_prompts = json::array();  // text prompts: the GGUF's tokenizer is llama.cpp's rebuild
  for (const json& prompt : reference["prompts"]) {
    if (prompt["kind"] == "ids") id_prompts.push_back(prompt);
  }
  reference["prompts"] = id_prompts;
  const fs::path file = testing::test_data("models/converted/" + family + ".gguf");
  Engine engine(ModelFiles::open(file.string()), family_engine_options(runtime));
  expect_batched_greedy_and_logits_match(engine, reference, runtime + " " + family + " gguf");
}

// gpt-oss as llama.cpp stores it, its experts in MXFP4 (the other matrices Q8_0):
// tests/data/models/converted/gpt_oss_mxfp4.gguf, whose reference HF computed from gguf-py's
// dequantization of the same file (tools/reference/gpt_oss_mxfp4.py). Greedy streams and
// teacher-forced logits on both runtimes; the experts resident as stored (E2M1 nibbles under their
// E8M0 exponents).
class Mxfp4GgufTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The engine on `model` (tests/data/models/converted/...: these weights) against HF's references.
  void expect_references_hold(const std::string& model) {
    if (auto missing = missing_runtime(GetParam())) GTEST_SKIP() << *missing;
    const json reference = read_json(testing::test_data("models/converted/gpt_oss_mxfp4.json"));
    const fs::path path = testing::test_data("models/converted/" + model);
    Engine engine(ModelFiles::open(path.string()), family_engine_options(GetParam()));
    expect_batched_greedy_and_logits_match(engine, reference, GetParam() + " " + model);
  }
};

TEST_P(Mxfp4GgufTest, GptOssExpertsInMxfp4MatchHfOnTheFilesWeights) {
  expect_references_hold("gpt_oss_mxfp4.gguf");
}

// The same weights as OpenAI publishes gpt-oss: an HF directory whose experts are MXFP4 blocks
// and exponents (quantization_config mxfp4; tests/data/models/converted/gpt_oss_mxfp4_hf, which
// transformers reads to exactly those weights: tools/reference/gpt_oss_mxfp4_hf.py).
TEST_P(Mxfp4GgufTest, GptOssAsPublishedMatchesHfOnItsWeights) {
  expect_references_hold("gpt_oss_mxfp4_hf");
}

// A published checkpoint whose expert exponents do not match its blocks (the same bytes, another
// shape) is refused naming the tensors and the shapes expected.
TEST_P(Mxfp4GgufTest, MisshapenPublishedBlocksAreRefusedByName) {
  if (auto missing = missing_runtime(GetParam())) GTEST_SKIP() << *missing;
  const fs::path source = testing::test_data("models/converted/gpt_oss_mxfp4_hf");
  const fs::path dir = testing::scratch_dir("engine/misshapen_mxfp4_" + GetParam());
  fs::remove_all(dir);
  fs::copy(source, dir);
  std::string bytes = testing::read_text(dir / "model.safetensors");
  const std::string from =
      R"("model.layers.0.mlp.experts.gate_up_proj_scales":{"dtype":"U8","shape":[3,64,2])";
  const std::size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + from.size() - 8, 8, "[6,32,2]");
  std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  try {
    Engine engine(ModelFiles::open(dir.string()), family_engine_options(GetParam()));
    ADD_FAILURE() << "misshapen MXFP4 exponents were read";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("tensors 'model.layers.0.mlp.experts.gate_up_proj_blocks' and "
                        "'model.layers.0.mlp.experts.gate_up_proj_scales' are not MXFP4 blocks "
                        "[3, 64, 2, 16] and exponents [3, 64, 2]"),
              std::string::npos)
        << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Runtimes, Mxfp4GgufTest, ::testing::Values("iree", "xla"),
                         [](const auto& param_info) { return param_info.param; });

INSTANTIATE_TEST_SUITE_P(Families, ConvertedGgufTest,
                         ::testing::Combine(::testing::ValuesIn(kConvertedFamilies),
                                            ::testing::Values(std::string("iree"),
                                                              std::string("xla"))),
                         family_runtime_name);

// The families that transform their logits before the argmax (Gemma 2, Granite, Cohere) at the
// vocabularies of their published checkpoints (256000, 49155, 256000), where IREE once failed to
// compile the prefill graph: tests/data/models/<type>_real_vocab, whose weights (up to 131 MB) are
// written from weights.json into the scratch directory by tools/reference/seeded_weights.py. The
// batched greedy streams of the id-list prompts equal HF's, teacher-forced logits lie within
// kLogitTolerance, and `xlacel generate --prompt-ids` gives the same tokens (ids the tiny
// tokenizer has no text for included).
const std::vector<std::string> kRealVocabFamilies = {"gemma2_real_vocab", "granite_real_vocab",
                                                     "cohere_real_vocab"};

// `name`'s directory with its weights, written once per build tree (again when weights.json
// changed: the copy beside the weights is the one they were written from).
fs::path seeded_model(const std::string& name) {
  const fs::path out = testing::scratch_dir("engine/seeded") / name;
  const fs::path source = testing::test_data("models/" + name);
  if (fs::exists(out / "model.safetensors")) {
    if (testing::read_text(out / "weights.json") == testing::read_text(source / "weights.json")) {
      return out;
    }
    fs::remove_all(out);  // stale
  }
  const std::string command =
      fmt::format("{} {} {} {} 2>&1", testing::quote(testing::venv() / "bin" / "python"),
                  testing::quote(fs::path(XLACEL_SOURCE_DIR) / "tools/reference/seeded_weights.py"),
                  testing::quote(source), testing::quote(out));
  if (std::system(command.c_str()) != 0) ADD_FAILURE() << "failed: " << command;
  return out;
}

class RealVocabFamilyTest : public ::testing::TestWithParam<FamilyRuntime> {};

TEST_P(RealVocabFamilyTest, TinyModelGreedyAndLogitsMatchHf) {
  const auto& [family, runtime] = GetParam();
  if (auto missing = missing_runtime(runtime)) GTEST_SKIP() << *missing;
  const fs::path dir = seeded_model(family);
  const json reference = read_json(testing::test_data("models/" + family) / "reference.json");
  Engine engine(ModelFiles::open(dir.string()), family_engine_options(runtime));
  expect_batched_greedy_and_logits_match(engine, reference, runtime + " " + family);

  const json& prompt = reference["prompts"][1];  // random_17
  std::string prompt_ids;
  for (int32_t id : ids(prompt["prompt_ids"])) prompt_ids += std::to_string(id) + " ";
  const auto want = ids(prompt["output_ids"]);
  const testing::ProgramRun run = testing::run_xlacel(
      testing::scratch_dir("engine/cli-" + family + "-" + runtime),
      {"generate", "-m", dir.string(), "--backend", runtime, "--output-format", "json",
       "--ignore-eos", "--prompt-ids", prompt_ids, "-n", std::to_string(want.size())});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto got = ids(json::parse(run.out)["output_ids"]);
  EXPECT_EQ(got, want) << "CLI differs at token " << matched(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, RealVocabFamilyTest,
                         ::testing::Combine(::testing::ValuesIn(kRealVocabFamilies),
                                            ::testing::Values(std::string("iree"),
                                                              std::string("xla"))),
                         family_runtime_name);

INSTANTIATE_TEST_SUITE_P(Families, FamilyTest,
                         ::testing::Combine(::testing::ValuesIn(kFamilies),
                                            ::testing::Values(std::string("iree"),
                                                              std::string("xla"))),
                         family_runtime_name);

std::string format_runtime_name(const ::testing::TestParamInfo<FormatRuntime>& info) {
  const auto& [format, runtime, weights] = info.param;
  return format + "_" + models::weight_type_name(weights) + "_" + runtime;
}

INSTANTIATE_TEST_SUITE_P(ResidentFormats, QuantizedGgufTest,
                         ::testing::Combine(::testing::ValuesIn(kResidentFormats),
                                            ::testing::Values(std::string("iree"),
                                                              std::string("xla")),
                                            ::testing::Values(models::WeightType::kAuto)),
                         format_runtime_name);
INSTANTIATE_TEST_SUITE_P(F32Control, QuantizedGgufTest,
                         ::testing::Combine(::testing::Values(std::string("q4_k")),
                                            ::testing::Values(std::string("iree"),
                                                              std::string("xla")),
                                            ::testing::Values(models::WeightType::kF32)),
                         format_runtime_name);

}  // namespace
}  // namespace xlacel::engine
