// The Llama-family graphs and weight preparation without running a model: f32 narrowing,
// llama.cpp's Q/K un-permutation, the weight argument list, RoPE frequencies against
// transformers, option checks, op counts per graph, and CUDA compile-only (tiny model).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <iostream>
#include <limits>

#include "common/error.h"
#include "model_files/model_files.h"
#include "common/float16.h"
#include "models/graph_options.h"
#include "models/rope_frequencies.h"
#include "models/test_support.h"
#include "models/weight_layout.h"
#include "models/weight_loader.h"
#include "test_paths.h"

namespace xlacel::models {
namespace {

namespace fs = std::filesystem;
using testing::quote;
using testing::venv;

const fs::path kTinyDir = testing::test_data("models/tiny_llama3");

#define REQUIRE_TINY() \
  if (!fs::exists(kTinyDir / "config.json")) GTEST_SKIP() << "tiny model not found at " << kTinyDir

TEST(FloatFormat, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd -> up
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above half
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max -> inf
  uint16_t nan = float_to_bfloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x7f, 0);
}

TEST(FloatFormat, HalfRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.5f), 0xc100);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);             // rounds to infinity
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);      // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);             // tie -> even (zero)
  EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);           // above half
  EXPECT_EQ(float_to_half(0x1.ffcp-15f), 0x0400);         // subnormal carries to normal
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
  // Every f16 value converts back to itself (exhaustive over finite halves).
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    float value = std::ldexp(static_cast<float>(bits & 0x3ff) + (bits >= 0x400 ? 1024.0f : 0.0f),
                             (bits >= 0x400 ? static_cast<int>(bits >> 10) : 1) - 25);
    ASSERT_EQ(float_to_half(value), bits) << value;
  }
}

TEST(WeightLoader, ReversePermuteMatchesTransformers) {
  // transformers: w.reshape(n_head, D/2, 2, cols).swapaxes(2, 1).reshape(rows, cols); with
  // n_head 2, D 4, cols 1, rows [0..7] -> [0, 2, 1, 3, 4, 6, 5, 7].
  std::vector<float> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(reverse_permute_rows(rows, 2, 1), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  std::vector<float> wide = {0, 10, 1, 11, 2, 12, 3, 13};  // 4 rows of 2 columns, one head
  EXPECT_EQ(reverse_permute_rows(wide, 1, 2), (std::vector<float>{0, 10, 2, 12, 1, 11, 3, 13}));
}

ModelConfig smol_like() {
  ModelConfig c;
  c.architecture = "llama";
  c.vocab_size = 100;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = true;
  return c;
}

TEST(WeightLayout, ArgumentOrder) {
  ModelConfig c = smol_like();
  auto specs = weight_specs(c, WeightType::kBF16);
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  std::vector<std::string> want = {"rope_inv_freq", "embed_tokens"};
  for (int l = 0; l < 2; ++l) {
    for (const char* n : {"input_norm", "q_proj", "k_proj", "v_proj", "o_proj", "post_norm",
                          "gate_proj", "up_proj", "down_proj"}) {
      want.push_back(fmt::format("l{}_{}", l, n));
    }
  }
  want.push_back("final_norm");
  EXPECT_EQ(names, want);
  EXPECT_EQ(specs[0].element, stablehlo::ElementType::kF32);
  EXPECT_EQ(specs[1].element, stablehlo::ElementType::kBF16);
  EXPECT_EQ(specs[3].shape, (std::vector<int64_t>{32, 32}));  // l0_q_proj [heads*D, hidden]
  EXPECT_EQ(specs[4].shape, (std::vector<int64_t>{16, 32}));  // l0_k_proj
  EXPECT_EQ(specs[3].gguf_name, "blk.0.attn_q.weight");
  EXPECT_EQ(specs[3].hf_name, "model.layers.0.self_attn.q_proj.weight");

  c.tie_word_embeddings = false;
  c.attention_bias = true;
  specs = weight_specs(c, WeightType::kF32);
  EXPECT_EQ(specs.back().name, "lm_head");
  EXPECT_EQ(specs[4].name, "l0_q_bias");
}

TEST(RopeFrequencies, Llama3MatchesTransformers) {
  REQUIRE_TINY();
  ModelFiles tiny = ModelFiles::open(kTinyDir.string());
  ASSERT_EQ(tiny.config().rope_scaling.type, RopeScaling::Type::kLlama3);
  auto reference = nlohmann::json::parse(
      testing::read_text(testing::test_data("models/tiny_llama3_reference.json")));
  std::vector<float> want = reference["rope_inv_freq"].get<std::vector<float>>();
  std::vector<float> got = rope_inverse_frequencies(tiny.config());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Within one ulp (torch's float32 pow may differ from libm's by an ulp).
    EXPECT_LE(std::abs(got[i] - want[i]), std::abs(want[i]) * 1.2e-7f) << i;
  }
}

TEST(RopeFrequencies, PlainAndFrequencyFactors) {
  ModelConfig c = smol_like();
  c.rope_theta = 10000;
  std::vector<float> f = rope_inverse_frequencies(c);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_NEAR(f[1], 1.0 / std::pow(10000.0, 0.25), 1e-7);
  c.rope_scaling.type = RopeScaling::Type::kFrequencyFactors;
  std::vector<float> factors = {1, 2, 4, 8};
  std::vector<float> scaled = rope_inverse_frequencies(c, factors);
  EXPECT_EQ(scaled[3], f[3] / 8);
  EXPECT_THROW(rope_inverse_frequencies(c, std::vector<float>{1}), Error);
}

TEST(LlamaGraph, RejectsOptionsTheConfigCannotHonour) {
  ModelConfig c = smol_like();
  EXPECT_THROW(emit_graph(c, {GraphKind::kPrefill, 64, 32, WeightType::kF32}), Error);
  EXPECT_THROW(emit_graph(c, {GraphKind::kDecode, 4, 32, WeightType::kF32}), Error);
  EXPECT_THROW(emit_graph(c, {GraphKind::kDecode, 1, 1024, WeightType::kF32}), Error);
  EXPECT_THROW(emit_graph(c, {GraphKind::kPrefill, 0, 32, WeightType::kF32}), Error);
}

TEST(LlamaGraph, SignatureAndAliases) {
  ModelConfig c = smol_like();
  for (WeightType w : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    std::string text = emit_graph(c, {GraphKind::kPrefill, 8, 64, w});
    EXPECT_NE(text.find("module @xlacel_prefill"), std::string::npos);
    EXPECT_NE(text.find("func.func @main(%tokens: tensor<8xi32>, %start: tensor<i32>, "
                        "%valid_length: tensor<i32>, %rope_inv_freq: tensor<4xf32>"),
              std::string::npos)
        << text.substr(0, 600);
    std::string cache = fmt::format("tensor<2x64x8x{}>", weight_type_name(w));
    // Results: next token, logits, then 4 caches aliased to results 2..5.
    EXPECT_NE(text.find("%k_cache_0: " + cache + " {tf.aliasing_output = 2 : i32}"),
              std::string::npos);
    EXPECT_NE(text.find("%v_cache_1: " + cache + " {tf.aliasing_output = 5 : i32}"),
              std::string::npos);
  }
  std::string decode = emit_graph(c, {GraphKind::kDecode, 1, 64, WeightType::kF32});
  EXPECT_NE(decode.find("module @xlacel_decode "), std::string::npos);
  EXPECT_NE(decode.find("%position: tensor<i32>"), std::string::npos);
  EXPECT_NE(decode.find("{tf.aliasing_output = 1 : i32}"), std::string::npos);
  std::string logits = emit_graph(c, {GraphKind::kDecodeLogits, 1, 64, WeightType::kF32});
  EXPECT_NE(logits.find("module @xlacel_decode_logits"), std::string::npos);
}

TEST(LlamaGraph, SmolLM2OpCounts) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);
  ModelFiles files = ModelFiles::open(model_path);
  for (GraphKind kind : {GraphKind::kPrefill, GraphKind::kDecode, GraphKind::kDecodeLogits}) {
    GraphOptions options{kind, kind == GraphKind::kPrefill ? 64 : 1, 512, WeightType::kF32};
    std::string text = emit_graph(files.config(), options);
    auto counts = testing::op_counts(text);
    std::cout << "SmolLM2 " << graph_kind_name(kind) << " (bucket " << options.bucket
              << ", capacity 512, f32): " << testing::format_op_counts(counts) << "\n";
    EXPECT_EQ(counts["stablehlo.dot_general"], 30 * 9 + 1);  // 7 linears + 2 attention + head
    EXPECT_EQ(counts["stablehlo.dynamic_update_slice"], 60);
  }
}

// CUDA compile-only of every graph kind (tiny model, bf16 and f32 weights): the graphs lower
// for GPUs. sm_90 first; this IREE build lacks its target details (iree-org/iree#22147), so
// fall back to sm_80, as tests/stablehlo_iree_test.cpp does.
TEST(LlamaGraph, CudaCompilesTiny) {
  REQUIRE_TINY();
  if (!fs::exists(venv() / "bin" / "iree-compile")) {
    GTEST_SKIP() << "iree-compile not found in " << venv();
  }
  ModelFiles tiny = ModelFiles::open(kTinyDir.string());
  const fs::path dir = testing::scratch_dir("models_graph/cuda");
  const std::string compiler = quote(venv() / "bin" / "iree-compile");
  std::string target = "sm_90";
  auto compile = [&](const fs::path& mlir, const std::string& cuda_target) {
    return testing::run_command(
        fmt::format("{} --iree-hal-target-device=cuda --iree-cuda-target={} {} -o {}", compiler,
                    cuda_target, quote(mlir), quote(fs::path(mlir).replace_extension(".vmfb"))),
        fs::path(mlir).replace_extension(".log"));
  };
  for (WeightType w : {WeightType::kF32, WeightType::kBF16}) {
    for (GraphKind kind : {GraphKind::kPrefill, GraphKind::kDecode, GraphKind::kDecodeLogits}) {
      GraphOptions options{kind, kind == GraphKind::kPrefill ? 16 : 1, 256, w};
      fs::path mlir = dir / fmt::format("{}_{}.mlir", graph_kind_name(kind), weight_type_name(w));
      testing::write_text(mlir, emit_graph(tiny.config(), options));
      auto result = compile(mlir, target);
      if (result.status != 0 && target == "sm_90" &&
          result.output.find("missing GPU target") != std::string::npos) {
        std::cout << "note: this iree-compile cannot target sm_90 (iree-org/iree#22147); "
                     "compiling for sm_80\n";
        target = "sm_80";
        result = compile(mlir, target);
      }
      EXPECT_EQ(result.status, 0) << mlir << " (cuda " << target << "):\n"
                                  << result.output.substr(0, 3000);
      std::cout << "tiny " << graph_kind_name(kind) << " " << weight_type_name(w) << ": cuda "
                << target << " compile " << fmt::format("{:.1f}", result.seconds) << " s\n";
    }
  }
}

}  // namespace
}  // namespace xlacel::models
