// Embeddings: the host's pooling (EmbeddingPool, normalized), the pooling a model's files ask for
// (a sentence-transformers directory), and the embed graph through the scheduler on both
// runtimes against HF transformers' base models (tests/data/models/embeddings_reference.json,
// from tools/reference/embeddings.py): a full cache, Gemma's scaled embeddings and sliding
// layers, short convolutions and Mamba-2 state, over prompts of several chunks; and the default
// model (SmolLM2 Q4_1: a real GGUF and vocabulary, its weights in their resident 4-bit form).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/embedding.h"
#include "engine/engine.h"
#include "models/test_support.h"
#include "runtime_availability.h"
#include "test_paths.h"

namespace xlacel::engine {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// HF's float32 pooled states and ours differ by the order of float32 sums (matmuls, norms).
constexpr double kTolerance = 1e-5;

double max_difference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

TEST(EmbeddingPool, PoolsRowsAddedChunkByChunk) {
  // Three rows of width 2, added as a chunk of two and a chunk of one.
  const std::vector<float> first = {1, 2, 3, 4}, second = {5, 9};
  auto pooled = [&](Pooling pooling) {
    EmbeddingPool pool(pooling, 2, 3);
    pool.add(first, 0);
    pool.add(second, 2);
    return pool.pooled();
  };
  EXPECT_EQ(pooled(Pooling::kMean), (std::vector<float>{3, 5}));
  EXPECT_EQ(pooled(Pooling::kCls), (std::vector<float>{1, 2}));
  EXPECT_EQ(pooled(Pooling::kLast), (std::vector<float>{5, 9}));
}

TEST(EmbeddingPool, RefusesRowsOutOfOrderAndAnIncompleteResult) {
  EmbeddingPool pool(Pooling::kMean, 2, 3);
  const std::vector<float> row = {1, 2};
  EXPECT_THROW(pool.add(row, 1), Error);  // row 0 first
  pool.add(row, 0);
  EXPECT_THROW(pool.pooled(), Error);  // 1 of 3 rows
  const std::vector<float> three_rows = {1, 2, 3, 4, 5, 6};
  EXPECT_THROW(pool.add(three_rows, 1), Error);  // past the prompt
}

TEST(Normalized, ScalesToUnitLengthAfterKeepingTheFirstDimensions) {
  const std::vector<float> v = {3, 4, 12};
  const std::vector<float> all = normalized(v);
  EXPECT_NEAR(all[0], 3.0 / 13, 1e-7);
  EXPECT_NEAR(all[2], 12.0 / 13, 1e-7);
  const std::vector<float> two = normalized(v, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NEAR(two[0], 0.6, 1e-7);
  EXPECT_NEAR(two[1], 0.8, 1e-7);
  EXPECT_EQ(normalized(std::vector<float>{0, 0}), (std::vector<float>{0, 0}));
}

// A sentence-transformers directory: modules.json names a Pooling module whose config picks the
// last token (as Qwen3-Embedding's does); without one, mean.
TEST(ModelPooling, ReadFromASentenceTransformersDirectory) {
  const fs::path source = testing::test_data("models/qwen3");
  EXPECT_EQ(ModelFiles::open(source.string()).config().pooling, Pooling::kMean);
  const fs::path dir = testing::scratch_dir("embedding/sentence-transformers");
  for (const auto& entry : fs::directory_iterator(source)) {
    fs::copy(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  fs::create_directories(dir / "1_Pooling");
  std::ofstream(dir / "1_Pooling" / "config.json")
      << R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": false,
             "pooling_mode_mean_tokens": false, "pooling_mode_lasttoken": true})";
  EXPECT_EQ(ModelFiles::open(dir.string()).config().pooling, Pooling::kLast);
  std::ofstream(dir / "1_Pooling" / "config.json") << R"({"pooling_mode_max_tokens": true})";
  EXPECT_THROW(ModelFiles::open(dir.string()), Error);
}

class EmbeddingOnRuntime : public ::testing::TestWithParam<std::string> {};

// One slot's chunks per call, 16 tokens each (the 150-token prompt in ten); or `together`:
// chunks of 16 tokens of up to four prompts in one call while four wait, then 32-token chunks of
// one, both kinds of embed call.
std::unique_ptr<Engine> open_engine(const std::string& runtime, const fs::path& model,
                                    bool together = false) {
  EngineOptions options;
  options.runtime = runtime;
  options.executor.slots = together ? 4 : 2;
  options.executor.capacity = 256;
  options.executor.prefill_bucket = together ? 32 : 16;
  options.executor.small_prefill_bucket = together ? 16 : 0;
  options.executor.prefill_sequences = together ? 4 : 1;
  return std::make_unique<Engine>(ModelFiles::open(model.string()), options);
}

// Each of a model's reference prompts pooled the three ways, all submitted at once, compared
// with HF's pooled and normalized last_hidden_state.
void expect_hf_embeddings(Engine& engine, const json& model) {
  struct Expected {
    std::size_t prompt;
    Pooling pooling;
    std::vector<float> want, got;
    FinishReason reason = FinishReason::kCancelled;
  };
  std::vector<Expected> cases;
  for (std::size_t p = 0; p < model["prompts"].size(); ++p) {
    const json& prompt = model["prompts"][p];
    cases.push_back({p, Pooling::kMean, prompt["mean"].get<std::vector<float>>(), {}});
    cases.push_back({p, Pooling::kCls, prompt["cls"].get<std::vector<float>>(), {}});
    cases.push_back({p, Pooling::kLast, prompt["last"].get<std::vector<float>>(), {}});
  }
  for (Expected& c : cases) {
    RequestOptions options;
    options.embed = c.pooling;
    engine.scheduler().submit(model["prompts"][c.prompt]["ids"].get<std::vector<int32_t>>(),
                              options, [&c](const TokenEvent& event) {
                                if (!event.finished) return;
                                c.reason = event.reason;
                                c.got = normalized(event.embedding);
                              });
  }
  engine.scheduler().run_until_idle();
  for (const Expected& c : cases) {
    EXPECT_EQ(c.reason, FinishReason::kEmbedded);
    EXPECT_LE(max_difference(c.got, c.want), kTolerance)
        << model["model"] << " prompt " << c.prompt << " " << pooling_name(c.pooling);
  }
}

json embeddings_reference() {
  return json::parse(testing::read_text(testing::test_data("models/embeddings_reference.json")));
}

// Every model's, one sequence per call (two slots: embeddings interleave).
TEST_P(EmbeddingOnRuntime, PooledHiddenStatesEqualHfBaseModels) {
  if (auto missing = testing::missing_runtime(GetParam(), 2)) GTEST_SKIP() << *missing;
  std::string missing;
  const json reference = embeddings_reference();
  int compared = 0;
  for (const json& model : reference["models"]) {
    const std::string name = model["model"];
    const fs::path path = name == "default" ? fs::path(testing::default_model_path())
                                            : testing::test_data("models/" + name);
    if (!fs::exists(path)) {
      missing = "the default model is not at " + path.string() + " (run scripts/setup)";
      continue;
    }
    expect_hf_embeddings(*open_engine(GetParam(), path), model);
    ++compared;
  }
  EXPECT_GE(compared, 4);  // the tiny models at least
  if (!missing.empty()) GTEST_SKIP() << missing << "; the tiny models passed";
}

// Chunks of several inputs in one call give each what it gets alone: a full cache (Qwen 3) and
// Mamba-2 state (Granite 4.0-H).
TEST_P(EmbeddingOnRuntime, InputsSharingCallsEqualHfBaseModels) {
  if (auto missing = testing::missing_runtime(GetParam(), 2)) GTEST_SKIP() << *missing;
  const json reference = embeddings_reference();
  int compared = 0;
  for (const json& model : reference["models"]) {
    if (model["model"] != "qwen3" && model["model"] != "granitemoehybrid") continue;
    ++compared;
    expect_hf_embeddings(
        *open_engine(GetParam(), testing::test_data("models/" + model["model"].get<std::string>()),
                     true),
        model);
  }
  EXPECT_EQ(compared, 2);
}

// An embedding writes its prompt's cache rows as a prefill does: a generation that follows on
// the same prompt reuses them and draws HF's greedy tokens.
TEST_P(EmbeddingOnRuntime, AGenerationAfterAnEmbeddingReusesItsRowsAndGetsHfTokens) {
  if (auto missing = testing::missing_runtime(GetParam(), 2)) GTEST_SKIP() << *missing;
  const fs::path dir = testing::test_data("models/qwen3");
  const json reference = json::parse(testing::read_text(dir / "reference.json"));
  const json& prompt = reference["prompts"][2];  // 70 tokens
  auto engine = open_engine(GetParam(), dir);
  RequestOptions embed;
  embed.embed = Pooling::kMean;
  const auto ids = prompt["prompt_ids"].get<std::vector<int32_t>>();
  engine->scheduler().submit(ids, embed, {});
  engine->scheduler().run_until_idle();
  RequestOptions greedy;
  greedy.max_tokens = 16;
  std::vector<int32_t> tokens;
  RequestStats stats;
  engine->scheduler().submit(ids, greedy, [&](const TokenEvent& event) {
    if (event.token >= 0) tokens.push_back(event.token);
    if (event.finished) stats = event.stats;
  });
  engine->scheduler().run_until_idle();
  EXPECT_EQ(stats.cached_tokens, 69);  // all but the last token, whose logits are needed
  const auto want = prompt["output_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(tokens, std::vector<int32_t>(want.begin(), want.begin() + 16));
}

INSTANTIATE_TEST_SUITE_P(Runtimes, EmbeddingOnRuntime, ::testing::Values("iree", "xla"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace xlacel::engine
