// `xlacel bench` as a user runs it: every figure the issue asks for is present and sane (the
// speed itself is measured, not asserted).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "models/test_support.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using nlohmann::json;

TEST(BenchCli, ReportsSpeedCompileMemoryAndTheBandwidthLimit) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto run = testing::run_xlacel(
      testing::scratch_dir("bench"), {"bench", "-m", model, "--prompt-tokens", "16", "--gen-tokens",
                                      "4", "-r", "2", "--output-format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json out = json::parse(run.out);
  for (const char* key : {"prompt_tokens_per_second", "generation_tokens_per_second",
                          "time_to_first_token_seconds"}) {
    EXPECT_GT(out[key]["mean"].get<double>(), 0) << key;
    EXPECT_LE(out[key]["min"].get<double>(), out[key]["max"].get<double>()) << key;
  }
  // Both prefill graphs (16 and 64 tokens) and decode, into an empty cache.
  ASSERT_EQ(out["compile_cold"].size(), 3u);
  for (const json& graph : out["compile_cold"]) EXPECT_FALSE(graph["cached"].get<bool>());
  for (const json& graph : out["compile_cached"]) EXPECT_TRUE(graph["cached"].get<bool>());
  EXPECT_GT(out["peak_rss_bytes"].get<double>(), out["weight_bytes"].get<double>());
  EXPECT_GT(out["read_bandwidth_bytes_per_second"].get<double>(), 1e8);
  EXPECT_GT(out["decode_limit_tokens_per_second"].get<double>(), 0);
  EXPECT_GT(out["decode_fraction_of_limit"].get<double>(), 0);

  const auto text = testing::run_xlacel(testing::scratch_dir("bench_text"),
                                        {"bench", "-m", model, "--prompt-tokens", "16",
                                         "--gen-tokens", "4", "-r", "1", "--no-cold-compile"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* line : {"prompt processing pp16:", "generation tg4:", "time to first token:",
                           "compile (cached):", "peak RSS:", "read bandwidth:", "decode limit"}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  }
}

// --batch: one row per batch size, measured on the scheduler with that many sequences decoding
// together; the figures are present and consistent (aggregate = batch x per-sequence).
TEST(BenchCli, BatchTableOnBothRuntimes) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  for (const std::string backend : {"iree", "xla"}) {
    const auto run =
        testing::run_xlacel(testing::scratch_dir("bench_batch_" + backend),
                            {"bench", "-m", model, "--backend", backend, "--prompt-tokens", "16",
                             "--gen-tokens", "8", "-r", "1", "--batch", "1,2", "--threads", "2",
                             "--no-cold-compile", "--output-format", "json"});
    if (backend == "xla" && run.exit_code != 0 &&
        run.err.find("no PJRT CPU plugin") != std::string::npos) {
      GTEST_SKIP() << run.err;
    }
    ASSERT_EQ(run.exit_code, 0) << backend << ": " << run.err;
    const json out = json::parse(run.out);
    EXPECT_EQ(out["slots"], 2);
    ASSERT_EQ(out["batch"].size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      const json& row = out["batch"][i];
      EXPECT_EQ(row["batch"], i + 1);
      EXPECT_GT(row["steps"].get<int>(), 0) << backend;
      EXPECT_GT(row["step_ms"].get<double>(), 0) << backend;
      EXPECT_NEAR(row["aggregate_tokens_per_second"].get<double>(),
                  row["per_sequence_tokens_per_second"].get<double>() * static_cast<double>(i + 1),
                  1e-6 * row["aggregate_tokens_per_second"].get<double>());
      EXPECT_GT(row["limit_tokens_per_second"].get<double>(), 0);
    }
  }
}

// A batch whose prefill takes more steps than it generates tokens: its first sequences would
// finish before the last joined, so no step would advance all of them (a row of zeros, as 64 x
// 128 prompt tokens gave on the GPU). The bench lets each decode that many more tokens.
TEST(BenchCli, ABatchWhosePrefillOutlastsItsGenerationIsStillMeasured) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto run = testing::run_xlacel(
      testing::scratch_dir("bench_batch_long_prefill"),
      {"bench", "-m", model, "--prompt-tokens", "16", "--gen-tokens", "2", "-r", "1", "--batch",
       "8", "--threads", "2", "--no-cold-compile", "--output-format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json row = json::parse(run.out)["batch"].at(0);
  EXPECT_EQ(row["batch"], 8);
  EXPECT_GT(row["steps"].get<int>(), 0);
  EXPECT_GT(row["aggregate_tokens_per_second"].get<double>(), 0);
}

// The decode limit counts the KV rows the attention reads: the runtime's kernel (IREE CPU) reads
// each sequence's rows up to its length, 205 on average for positions 200 .. 208; the graph's own
// attention (XLA) its whole window of 256 rows. Tiny Qwen 3: 2 layers x K and V x 2 kv heads x
// 16 x 4 bytes = 512 bytes a row.
TEST(BenchCli, TheDecodeLimitCountsTheKvRowsTheAttentionReads) {
  XLACEL_REQUIRE_IREE_PYTHON();
  const std::string model = testing::test_data("models/qwen3").string();
  for (const std::string backend : {"iree", "xla"}) {
    const auto run = testing::run_xlacel(
        testing::scratch_dir("bench_kv_" + backend),
        {"bench", "-m", model, "--backend", backend, "--prompt-tokens", "200", "--gen-tokens", "10",
         "--context", "512", "-r", "1", "--no-cold-compile", "--output-format", "json"});
    if (backend == "xla" && run.exit_code != 0 &&
        run.err.find("PJRT plugin") != std::string::npos) {
      GTEST_SKIP() << run.err;
    }
    ASSERT_EQ(run.exit_code, 0) << backend << ": " << run.err;
    const json out = json::parse(run.out);
    const bool kernel = backend == "iree" &&
                        std::getenv("XLACEL_IREE_NO_ATTENTION_KERNEL") == nullptr &&
                        out["device"].get<std::string>().find("kernels none") == std::string::npos;
    EXPECT_EQ(out["decode_bytes_per_token"]["kv_cache"].get<int64_t>(), 512 * (kernel ? 205 : 256))
        << backend << ": " << out["device"];
  }
}

}  // namespace
}  // namespace xlacel
