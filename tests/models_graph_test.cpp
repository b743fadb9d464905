// The Llama-family graphs and weight preparation without running a model: f32 narrowing,
// llama.cpp's Q/K un-permutation, the architecture registry, the weight argument list, RoPE
// frequencies against transformers, option checks, every emitted `main` against its
// GraphSignature, op counts per graph, and CUDA compile-only (tiny model).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "common/float16.h"
#include "device/device.h"
#include "model_files/model_files.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"
#include "models/llama_layers.h"
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

// The bulk narrowing (vectorized and threaded at load) gives float_to_half's bits for every
// value: each finite half and the points between neighbours (ties and their neighbours),
// subnormals, overflow, infinities, signed zeros and NaN among others in a vector, on one
// thread and on every core.
TEST(FloatFormat, BulkNarrowingMatchesOneByOne) {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const float value =
        std::ldexp(static_cast<float>(bits & 0x3ff) + (bits >= 0x400 ? 1024.0f : 0.0f),
                   (bits >= 0x400 ? static_cast<int>(bits >> 10) : 1) - 25);
    const float next = std::nextafter(value, std::numeric_limits<float>::infinity());
    const float step =
        bits >= 0x400 ? std::ldexp(1.0f, static_cast<int>(bits >> 10) - 25) : 0x1p-24f;
    const float tie = value + step / 2;
    for (float v : {value, next, tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1e9f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  for (float v : {65519.0f, 65520.0f, 1e30f, std::numeric_limits<float>::infinity(), 0x1p-26f,
                  0x1p-149f, std::numeric_limits<float>::quiet_NaN(), -0.0f}) {
    values.push_back(v);
    values.push_back(-v);
  }
  // Four times over: past the size from which the narrowing runs on every core.
  const std::size_t once = values.size();
  for (int copy = 0; copy < 3; ++copy)
    values.insert(values.end(), values.begin(), values.begin() + once);
  values.push_back(1.0f);  // a partial vector at the end
  std::vector<uint16_t> bulk(values.size()), bf16(values.size());
  floats_to_halves(values, bulk);
  floats_to_bfloat16s(values, bf16);
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(bulk[i], float_to_half(values[i])) << i << " " << values[i];
    ASSERT_EQ(bf16[i], float_to_bfloat16(values[i])) << i << " " << values[i];
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

// A GGUF llama's q/k rows stay as the converter permuted them (ModelConfig::qk_rows_interleaved,
// RoPE turning adjacent pairs), so a weight stored as the graph takes it is the file's own bytes.
TEST(WeightLoader, GgufQAndKAreTheFilesOwnBytes) {
  const ModelFiles files =
      ModelFiles::open(testing::test_data("models/tiny_quantized/bf16.gguf").string());
  ASSERT_TRUE(files.config().qk_rows_interleaved);
  int checked = 0;
  for (const WeightSpec& spec : architecture_for(files.config())
                                    .weight_arguments(files.config(), WeightType::kAuto, false)) {
    if (!spec.name.ends_with("_q_proj") && !spec.name.ends_with("_k_proj")) continue;
    const HostTensor tensor = prepare_weight(files, spec);
    ASSERT_TRUE(tensor.file.has_value()) << spec.name;
    EXPECT_EQ(tensor.bytes.data(), tensor.file->data.data()) << spec.name;
    ++checked;
  }
  EXPECT_EQ(checked, 2 * files.config().num_layers);
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

const Architecture& llama() {
  return architecture_for(smol_like());
}

std::string emit(const ModelConfig& c, const GraphOptions& options) {
  return architecture_for(c).emit(c, options).mlir;
}

TEST(Architecture, RegistryKnowsEveryFamily) {
  // model_type (HF or GGUF) -> the family that runs it.
  const std::map<std::string, std::string> families = {
      {"cohere", "cohere"},
      {"command-r", "cohere"},
      {"gemma2", "gemma2"},
      {"gemma3", "gemma3"},
      {"gemma3_text", "gemma3"},
      {"gpt-oss", "gpt_oss"},
      {"gpt_oss", "gpt_oss"},
      {"granite", "granite"},
      {"lfm2", "lfm2"},
      {"granitehybrid", "granitemoehybrid"},
      {"granitemoehybrid", "granitemoehybrid"},
      {"llama", "llama"},
      {"mistral", "llama"},
      {"mixtral", "mixtral"},
      {"olmo2", "olmo2"},
      {"olmoe", "olmoe"},
      {"phi3", "phi3"},
      {"qwen2", "llama"},
      {"qwen3", "qwen3"},
      {"qwen3_moe", "qwen3_moe"},
      {"qwen3moe", "qwen3_moe"},
      {"smollm3", "llama"},
      {"stablelm", "stablelm"},
      {"starcoder2", "starcoder2"},
  };
  std::vector<std::string> types;
  ModelConfig c = smol_like();
  for (const auto& [type, family] : families) {
    types.push_back(type);
    c.architecture = type;
    EXPECT_EQ(architecture_for(c).name(), family) << type;
  }
  EXPECT_EQ(supported_model_types(), types);  // sorted, as the map
  const std::string supported = fmt::format("(supported: {})", fmt::join(types, ", "));
  c.architecture = "gpt_neox";
  try {
    architecture_for(c, "/models/gpt_neox");
    ADD_FAILURE() << "gpt_neox has an architecture";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/models/gpt_neox: unknown architecture 'gpt_neox' " + supported);
  }
  try {
    architecture_for(c);
    ADD_FAILURE() << "gpt_neox has an architecture";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "gpt_neox: unknown architecture 'gpt_neox' " + supported);
  }
}

TEST(Architecture, CacheSpecsAndSizes) {
  ModelConfig c = smol_like();
  std::vector<TensorSpec> caches = llama().cache_specs(c, WeightType::kBF16, 8, 512);
  ASSERT_EQ(caches.size(), 4u);  // k, v per layer
  std::vector<std::string> names;
  for (const TensorSpec& spec : caches) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}));
  EXPECT_EQ(caches[0].shape, (std::vector<int64_t>{8, 2, 512, 8}));  // slots, kv heads, cap, D
  EXPECT_EQ(caches[0].element, stablehlo::ElementType::kBF16);
  EXPECT_EQ(device::dense_byte_size(caches[0].element, caches[0].shape), 8u * 2 * 512 * 8 * 2);
  EXPECT_EQ(device::dense_byte_size(stablehlo::ElementType::kI32, {}), 4u);
  const int64_t three[] = {3};
  EXPECT_EQ(device::dense_byte_size(stablehlo::ElementType::kI1, three), 3u);
  EXPECT_EQ(llama().cache_specs(c, WeightType::kF32, 1, 64)[3].element,
            stablehlo::ElementType::kF32);
}

TEST(Architecture, SlidingLayersShorterThanTheContextKeepARingOfTheirWindow) {
  ModelConfig c = smol_like();
  c.architecture = "gemma3_text";
  c.sliding_window = 24;
  c.layer_types = {"sliding_attention", "full_attention"};
  const Architecture& gemma = architecture_for(c);
  std::vector<TensorSpec> caches = gemma.cache_specs(c, WeightType::kF32, 4, 256);
  ASSERT_EQ(caches.size(), 4u);
  EXPECT_EQ(caches[0].shape, (std::vector<int64_t>{4, 2, 24, 8}));   // k_cache_0: the window
  EXPECT_EQ(caches[1].shape, (std::vector<int64_t>{4, 2, 24, 8}));   // v_cache_0
  EXPECT_EQ(caches[2].shape, (std::vector<int64_t>{4, 2, 256, 8}));  // the full layer
  // A window as long as the context: no ring.
  EXPECT_EQ(gemma.cache_specs(c, WeightType::kF32, 4, 24)[0].shape,
            (std::vector<int64_t>{4, 2, 24, 8}));
  EXPECT_EQ(gemma.cache_specs(c, WeightType::kF32, 4, 16)[0].shape,
            (std::vector<int64_t>{4, 2, 16, 8}));
  // Llama-family layers never slide, whatever the config says.
  ModelConfig mistral = smol_like();
  mistral.sliding_window = 24;
  mistral.layer_types = {"sliding_attention", "sliding_attention"};
  EXPECT_EQ(architecture_for(mistral).cache_specs(mistral, WeightType::kF32, 1, 256)[0].shape[2],
            256);
}

TEST(GraphOptions, NamesIncludeSlots) {
  EXPECT_EQ(graph_name({GraphKind::kDecode, 8, 512, WeightType::kF32, 8}), "decode-b8-s8-c512-f32");
  EXPECT_EQ(graph_name({GraphKind::kPrefill, 64, 512, WeightType::kF32, 8}),
            "prefill-b64-s8-c512-f32");
  EXPECT_EQ(graph_name({GraphKind::kDecodeLogits, 1, 256, WeightType::kBF16}),
            "decode-logits-b1-s1-c256-bf16");
  EXPECT_EQ(graph_name({GraphKind::kDecode, 8, 512, WeightType::kF32, 16, 128}),
            "decode-b8-s16-c512-w128-f32");
}

TEST(WeightLayout, ArgumentOrder) {
  ModelConfig c = smol_like();
  auto specs = llama().weight_specs(c, WeightType::kBF16);
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
  specs = llama().weight_specs(c, WeightType::kF32);
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

// YaRN (tests/data/models/yarn_frequencies.json, tools/reference/yarn_frequencies.py): each
// config.json read as ModelFiles reads it gives transformers' frequencies, within one ulp (its
// float32 pow), and its attention factor.
TEST(RopeFrequencies, YarnMatchesTransformers) {
  const auto reference =
      nlohmann::json::parse(testing::read_text(testing::test_data("models/yarn_frequencies.json")));
  ASSERT_FALSE(reference["cases"].empty());
  for (const auto& [name, entry] : reference["cases"].items()) {
    const fs::path dir = testing::scratch_dir("models_graph/yarn_" + name);
    std::ofstream(dir / "config.json") << entry["config"].dump();
    const ModelConfig c = ModelFiles::open(dir.string()).config();
    ASSERT_EQ(c.rope_scaling.type, RopeScaling::Type::kYarn) << name;
    EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor, entry["attention_factor"].get<double>())
        << name;
    const std::vector<float> want = entry["inv_freq"].get<std::vector<float>>();
    const std::vector<float> got = rope_inverse_frequencies(c);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(std::abs(got[i] - want[i]), std::abs(want[i]) * 1.2e-7f) << name << " " << i;
    }
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

// Error's message for emitting `options`, or "" when it emits.
std::string emit_error(const ModelConfig& c, const GraphOptions& options) {
  try {
    emit(c, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaGraph, RejectsOptionsTheConfigCannotHonour) {
  ModelConfig c = smol_like();
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 64, 32, WeightType::kF32}),
            "prefill-b64-s1-c32-f32: bucket (64) exceeds the KV-cache capacity (32)");
  EXPECT_EQ(emit_error(c, {GraphKind::kDecode, 4, 32, WeightType::kF32, 2}),
            "decode-b4-s2-c32-f32: decode bucket (4) exceeds the slots (2): row b runs slot b");
  EXPECT_EQ(emit_error(c, {GraphKind::kDecode, 1, 1024, WeightType::kF32}),
            "decode-b1-s1-c1024-f32: capacity (1024) exceeds the model's "
            "max_position_embeddings (256)");
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 0, 32, WeightType::kF32}),
            "prefill-b0-s1-c32-f32: bucket must be at least 1 (got 0)");
  EXPECT_EQ(emit_error(c, {GraphKind::kDecodeLogits, 1, 32, WeightType::kF32, 0}),
            "decode-logits-b1-s0-c32-f32: slots must be at least 1 (got 0)");
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 16, 0, WeightType::kF32}),
            "prefill-b16-s1-c0-f32: capacity must be at least 1 (got 0)");
  EXPECT_EQ(emit_error(c, {GraphKind::kDecode, 1, 32, WeightType::kF32, 1, 64}),
            "decode-b1-s1-c32-w64-f32: window (64) is not in [0, capacity 32]");
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 16, 32, WeightType::kF32, 1, 8}),
            "prefill-b16-s1-c32-w8-f32: prefill window (8) is shorter than the bucket (16)");
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 16, 32, WeightType::kF32, 1, 16}), "");
  EXPECT_THROW(llama().signature(c, {GraphKind::kDecode, 4, 32, WeightType::kF32, 2}), Error);
  // A prefill bucket may exceed the slots (it fills one slot); decode may use fewer rows.
  EXPECT_EQ(emit_error(c, {GraphKind::kPrefill, 16, 32, WeightType::kF32, 2}), "");
  EXPECT_EQ(emit_error(c, {GraphKind::kDecode, 2, 32, WeightType::kF32, 4}), "");
}

// `main`'s argument list and result types, as printed: "%name: tensor<...> {attrs}" each.
struct MainSignature {
  std::vector<std::string> arguments;
  std::vector<std::string> results;
};

std::vector<std::string> split(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, from)) {
    parts.push_back(text.substr(from, at - from));
    from = at + separator.size();
  }
  parts.push_back(text.substr(from));
  return parts;
}

MainSignature parse_main(const std::string& text) {
  const std::string head = "func.func @main(";
  size_t open = text.find(head);
  EXPECT_NE(open, std::string::npos);
  size_t line_end = text.find(" {\n", open);
  std::string line = text.substr(open + head.size(), line_end - open - head.size());
  size_t arrow = line.rfind(") -> ");
  MainSignature main;
  // Argument types hold no ", %" and the results no ", " inside one type.
  for (std::string& argument : split(line.substr(0, arrow), ", %")) {
    main.arguments.push_back(argument.front() == '%' ? argument : "%" + argument);
  }
  std::string results = line.substr(arrow + 5);
  if (results.front() == '(') results = results.substr(1, results.size() - 2);
  main.results = split(results, ", ");
  return main;
}

std::string type_text(const TensorSpec& spec) {
  return stablehlo::TensorType(spec.element, spec.shape).str();
}

// What the executor binds by: every argument and result of `main` is the signature's, by name,
// type and order, and every cache is aliased to its result.
void expect_main_matches_signature(const ModelConfig& c, const GraphOptions& options) {
  SCOPED_TRACE(graph_name(options) + (c.attention_bias ? " bias" : "") +
               (c.tie_word_embeddings ? " tied" : " untied"));
  GraphSignature signature = llama().signature(c, options);
  MainSignature main = parse_main(emit(c, options));
  std::vector<std::string> want_arguments;
  for (const TensorSpec& spec : signature.inputs) {
    want_arguments.push_back(fmt::format("%{}: {}", spec.name, type_text(spec)));
  }
  for (const WeightSpec& spec : signature.weights) {
    want_arguments.push_back(
        fmt::format("%{}: {}", spec.name, stablehlo::TensorType(spec.element, spec.shape).str()));
  }
  for (size_t i = 0; i < signature.caches.size(); ++i) {
    const TensorSpec& spec = signature.caches[i];
    want_arguments.push_back(fmt::format("%{}: {} {{tf.aliasing_output = {} : i32}}", spec.name,
                                         type_text(spec), signature.outputs.size() + i));
  }
  EXPECT_EQ(main.arguments, want_arguments);
  std::vector<std::string> want_results;
  for (const TensorSpec& spec : signature.outputs) want_results.push_back(type_text(spec));
  for (const TensorSpec& spec : signature.caches) want_results.push_back(type_text(spec));
  EXPECT_EQ(main.results, want_results);
}

TEST(LlamaGraph, EmittedMainMatchesTheSignature) {
  for (bool bias : {false, true}) {
    for (bool tied : {false, true}) {
      ModelConfig c = smol_like();
      c.attention_bias = bias;
      c.tie_word_embeddings = tied;
      for (WeightType w : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
        expect_main_matches_signature(c, {GraphKind::kPrefill, 16, 64, w, 4});
        expect_main_matches_signature(c, {GraphKind::kDecode, 4, 64, w, 4});
        expect_main_matches_signature(c, {GraphKind::kDecode, 2, 64, w, 4});
        expect_main_matches_signature(c, {GraphKind::kDecodeLogits, 4, 64, w, 4});
        expect_main_matches_signature(c, {GraphKind::kDecodeLogits, 1, 64, w, 1});
        expect_main_matches_signature(c, {GraphKind::kDecode, 2, 64, w, 4, 16});
      }
    }
  }
}

// A decode window changes which cache rows attention reads (a slice of rows 0 .. window-1 of
// slots 0 .. bucket-1), not the arguments: the scatter still updates the whole cache.
TEST(LlamaGraph, DecodeWindowSlicesTheCacheRowsAttentionReads) {
  ModelConfig c = smol_like();
  const std::string full = emit(c, {GraphKind::kDecode, 2, 64, WeightType::kF32, 4});
  const std::string window = emit(c, {GraphKind::kDecode, 2, 64, WeightType::kF32, 4, 16});
  const std::string full_slice = "limit_indices = array<i64: 2, 2, 64, 8>";
  const std::string window_slice = "limit_indices = array<i64: 2, 2, 16, 8>";
  EXPECT_NE(full.find(full_slice), std::string::npos);
  EXPECT_EQ(full.find(window_slice), std::string::npos);
  EXPECT_NE(window.find(window_slice), std::string::npos);
  EXPECT_EQ(window.find(full_slice), std::string::npos);
  EXPECT_NE(window.find("tensor<2x2x2x16xf32>"), std::string::npos) << "scores over 16 keys";
}

TEST(LlamaGraph, SignatureNamesAndShapes) {
  ModelConfig c = smol_like();
  GraphSignature prefill = llama().signature(c, {GraphKind::kPrefill, 8, 64, WeightType::kF32, 4});
  std::vector<std::string> names;
  for (const TensorSpec& spec : prefill.inputs) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tokens", "slot", "start", "valid_length"}));
  EXPECT_EQ(prefill.inputs[0].shape, (std::vector<int64_t>{8}));
  ASSERT_EQ(prefill.outputs.size(), 2u);
  EXPECT_EQ(prefill.outputs[0].name, "next_token");
  EXPECT_EQ(prefill.outputs[1].name, "logits");
  EXPECT_EQ(prefill.outputs[1].shape, (std::vector<int64_t>{100}));
  EXPECT_EQ(prefill.caches[0].shape, (std::vector<int64_t>{4, 2, 64, 8}));

  GraphSignature decode = llama().signature(c, {GraphKind::kDecode, 4, 64, WeightType::kF32, 8});
  ASSERT_EQ(decode.inputs.size(), 2u);
  EXPECT_EQ(decode.inputs[1].name, "positions");
  EXPECT_EQ(decode.inputs[1].shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(decode.outputs.size(), 1u);
  EXPECT_EQ(decode.outputs[0].name, "next_tokens");
  EXPECT_EQ(decode.outputs[0].shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(decode.caches[0].shape, (std::vector<int64_t>{8, 2, 64, 8}));

  GraphSignature logits =
      llama().signature(c, {GraphKind::kDecodeLogits, 4, 64, WeightType::kF32, 8});
  ASSERT_EQ(logits.outputs.size(), 1u);
  EXPECT_EQ(logits.outputs[0].name, "logits");
  EXPECT_EQ(logits.outputs[0].shape, (std::vector<int64_t>{4, 100}));

  std::string text = emit(c, {GraphKind::kDecode, 4, 64, WeightType::kF32, 8});
  EXPECT_NE(text.find("module @xlacel_decode "), std::string::npos);
  std::string logits_text = emit(c, {GraphKind::kDecodeLogits, 4, 64, WeightType::kF32, 8});
  EXPECT_NE(logits_text.find("module @xlacel_decode_logits"), std::string::npos);
  // Decode writes each row's K/V by scatter into the whole cache, prefill by
  // dynamic_update_slice into its slot.
  auto decode_ops = testing::op_counts(text);
  EXPECT_EQ(decode_ops["stablehlo.scatter"], 4);
  EXPECT_EQ(decode_ops["stablehlo.dynamic_update_slice"], 0);
  auto prefill_ops = testing::op_counts(emit(c, {GraphKind::kPrefill, 8, 64, WeightType::kF32, 4}));
  EXPECT_EQ(prefill_ops["stablehlo.dynamic_update_slice"], 4);
  EXPECT_EQ(prefill_ops["stablehlo.scatter"], 0);
}

// A mixture of experts reads each expert it runs at its index in the stacked weights, without a
// conditional per expert: a decode step reads top_k experts per row at most, not all of them;
// prefill's many rows run blocks of rows by expert in one loop whose body reads one expert.
TEST(LlamaGraph, MoeGraphsReadTheExpertsTheirRowsChoseAtTheirIndex) {
  ModelConfig c = smol_like();
  c.architecture = "mixtral";
  c.num_experts = 8;
  c.experts_per_token = 2;
  c.expert_intermediate_size = 16;
  // The stacked experts' weights are read only through a slice: one expert at an index.
  const std::regex expert_weight("%l[0-9]+_(gate|up|down)_proj\\b");
  auto expert_slices = [&](const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    int slices = 0;
    while (std::getline(lines, line)) {
      if (line.find("func.func") != std::string::npos || !std::regex_search(line, expert_weight)) {
        continue;
      }
      EXPECT_NE(line.find("stablehlo.dynamic_slice"), std::string::npos) << line;
      ++slices;
    }
    return slices;
  };
  for (int64_t rows : {1, 3}) {
    const std::string text = emit(c, {GraphKind::kDecode, rows, 64, WeightType::kF32, 4});
    EXPECT_EQ(testing::op_counts(text)["stablehlo.if"], 0);
    // rows * top_k slots, each reading one expert's gate, up and down.
    EXPECT_EQ(expert_slices(text), c.num_layers * rows * c.experts_per_token * 3) << rows;
  }
  // 4 rows choose 8 of 8 experts: every expert runs on every row, as blocks of rows by expert
  // would compute no less.
  EXPECT_EQ(models::expert_row_blocks(4, c.experts_per_token, c.num_experts), 0);
  EXPECT_EQ(expert_slices(emit(c, {GraphKind::kDecode, 4, 64, WeightType::kF32, 4})),
            c.num_layers * c.num_experts * 3);
  // 16 rows: each expert on the rows that chose it, in blocks of 8 (32 choices, at most 7 rows of
  // padding per expert: 11 blocks), run by one loop per layer whose body reads each block's expert.
  EXPECT_EQ(models::expert_row_blocks(16, c.experts_per_token, c.num_experts), 11);
  const std::string prefill = emit(c, {GraphKind::kPrefill, 16, 64, WeightType::kF32, 4});
  EXPECT_EQ(testing::op_counts(prefill)["stablehlo.while"], c.num_layers);
  EXPECT_EQ(expert_slices(prefill), c.num_layers * 4 * 3);  // 4 blocks a pass
}

TEST(LlamaGraph, SmolLM2OpCounts) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);
  ModelFiles files = ModelFiles::open(model_path);
  for (GraphKind kind : {GraphKind::kPrefill, GraphKind::kDecode, GraphKind::kDecodeLogits}) {
    GraphOptions options{kind, kind == GraphKind::kPrefill ? 64 : 8, 512, WeightType::kF32, 8};
    std::string text = emit(files.config(), options);
    auto counts = testing::op_counts(text);
    std::cout << "SmolLM2 " << graph_name(options) << ": " << testing::format_op_counts(counts)
              << "\n";
    EXPECT_EQ(counts["stablehlo.dot_general"], 30 * 9 + 1);  // 7 linears + 2 attention + head
    // K and V of 30 layers: prefill into its slot, decode by a scatter of every row.
    const char* cache_write =
        kind == GraphKind::kPrefill ? "stablehlo.dynamic_update_slice" : "stablehlo.scatter";
    EXPECT_EQ(counts[cache_write], 60);
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
      GraphOptions options{kind, kind == GraphKind::kPrefill ? 16 : 4, 256, w, 4};
      fs::path mlir = dir / fmt::format("{}.mlir", graph_name(options));
      testing::write_text(mlir, emit(tiny.config(), options));
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
