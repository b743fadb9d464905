// Graphs at the sizes of real models compile, on IREE llvm-cpu through the IREE device (the flags
// and the planar kernel xlacel uses, into a fresh compile cache) and on XLA's PJRT CPU plugin. The
// tiny models of the other tests cannot catch a failure that only appears at size: IREE once kept
// a 64 KiB tile of the embedding lookup on the stack at hidden 2048 (over its 32 KiB limit,
// models::take_rows), and a whole transformed logit row at a vocabulary of 49152 (Gemma 2,
// Granite, Cohere: models/llama_graph.cpp), which only real sizes showed.
//
// Two suites. IreeLargeGraphs: Llama-3.2-1B's shape in every form its weights are kept in.
// FamiliesAtRealSize: every family at the config of a real published model of it
// (tests/data/models/real_size), as an HF directory (bf16) and as a GGUF (4-bit, the kernel's).
//
// Only config.json is written: emitting and compiling need no weights. Formats the weights are
// kept in (WeightType::kAuto) come from ModelConfig::stored_types, set here as a file of that
// format would.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backends.h"
#include "common/error.h"
#include "common/json_file.h"
#include "device/device.h"
#include "model_files/model_files.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/test_support.h"
#include "runtime_availability.h"
#include "test_paths.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;
using models::GraphKind;
using models::WeightType;

// meta-llama/Llama-3.2-1B's config.json, as tools/gpu/make_random_llama.py writes it, but with 2
// layers instead of 16: every layer emits the same dispatches, so 2 compile exactly the dispatch
// shapes of the real model (layer 0 follows the embedding lookup, layer 1 a residual), and the
// compile time grows with the layers.
constexpr const char* kConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 2,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
  "vocab_size": 128256, "tie_word_embeddings": true, "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "hidden_act": "silu",
  "attention_bias": false, "mlp_bias": false,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "bos_token_id": 128000, "eos_token_id": 128001
})";

// What the weights are kept as: a weight type, and for kAuto the format the file stores every
// matrix in; `kernel`: whether IREE's hand-written product takes the products (where the CPU
// runs it), or the graph's own StableHLO product (the fallback without AVX2, or
// XLACEL_IREE_NO_PLANAR_KERNEL=1).
struct Case {
  std::string name;
  WeightType weights;
  std::optional<DType> stored;
  bool kernel = true;
};
void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

// f32/bf16/f16: every weight converted at load (--weights). auto: bf16 (HF directories, BF16
// GGUF) and f16 kept narrow; the GGUF block formats as planes, one case per distinct plane layout
// (code bits, offsets, group): Q8_0 (as Q5_0), Q4_0, Q4_1 (as Q4_K), Q5_1 (as Q5_K), Q6_K. With
// the kernel the planes differ only in the embedding lookup and the kernel's call; without it also
// in the dequantization feeding each product, so each layout is compiled both ways.
std::vector<Case> cases() {
  std::vector<Case> all = {{"f32", WeightType::kF32, std::nullopt},
                           {"bf16", WeightType::kBF16, std::nullopt},
                           {"f16", WeightType::kF16, std::nullopt}};
  const std::vector<std::pair<std::string, DType>> stored = {
      {"BF16", DType::kBF16}, {"F16", DType::kF16},   {"Q8_0", DType::kQ8_0},
      {"Q4_0", DType::kQ4_0}, {"Q4_1", DType::kQ4_1}, {"Q5_1", DType::kQ5_1},
      {"Q6_K", DType::kQ6_K}};
  for (bool kernel : {true, false}) {
    for (const auto& [name, dtype] : stored) {
      all.push_back({fmt::format("auto_{}{}", name, kernel ? "" : "_no_kernel"), WeightType::kAuto,
                     dtype, kernel});
    }
  }
  return all;
}

// This process's scratch directory: ctest runs each test in a process of its own, perhaps several
// at once, so each writes its config and compile cache apart (and removes them when done).
fs::path process_dir() {
  static const fs::path dir = [] {
    fs::path path = testing::scratch_dir("large_graph_compile") / std::to_string(::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
    return path;
  }();
  return dir;
}

// What ModelFiles records for a file storing every matrix as `stored` (vectors stay f32).
// Every matrix stored as `stored`, the experts' as `experts` where given (llama.cpp's gpt-oss:
// MXFP4 experts, Q8_0 for the rest).
void store_matrices_as(ModelConfig& config, DType stored,
                       std::optional<DType> experts = std::nullopt) {
  const models::Architecture& architecture = models::architecture_for(config);
  // As llama-quantize: a matrix whose rows are not whole blocks (LFM2's convolution weights,
  // 3 taps per row) stays f32, as do biases (gpt-oss's experts' rows of biases).
  for (const models::WeightSpec& spec : architecture.weight_specs(config, WeightType::kF32)) {
    const DType type = spec.expert && experts ? *experts : stored;
    const auto block = static_cast<int64_t>(dtype_block_elements(type));
    if (spec.shape.size() == 2 && !spec.rope_inv_freq && spec.shape[1] % block == 0 &&
        !spec.name.ends_with("_bias")) {
      config.stored_types[spec.hf_name] = type;
    }
  }
}

// The config a directory holding only `config_json` as config.json gives.
ModelConfig config_of(const std::string& name, const std::string& config_json) {
  const fs::path dir = process_dir() / name;
  fs::create_directories(dir);
  // The graphs are compiled for the weight forms each case gives, not for the published
  // checkpoint's quantization (gpt-oss's MXFP4 safetensors), which an HF directory may not have.
  Json config = Json::parse(config_json);
  config.erase("quantization_config");
  std::ofstream(dir / "config.json") << config.dump();
  return ModelFiles::open(dir.string()).config();
}

ModelConfig one_b_config(const std::optional<DType>& stored) {
  ModelConfig config = config_of("llama-3.2-1b", kConfig);
  if (stored) store_matrices_as(config, *stored);
  return config;
}

// The graphs the executor compiles for one sequence of generate/bench (capacity 512, first
// window): a 64-token prefill chunk and one-row decode. With more rows than one, IREE without
// the kernel, and XLA, take f32 weights in place of planes (Executor::graph_weights); one-slot
// prefill keeps the planes (Executor::prefill_weights).
std::vector<models::GraphOptions> graphs(WeightType weights) {
  std::vector<models::GraphOptions> both;
  for (auto [kind, bucket] :
       {std::pair{GraphKind::kPrefill, int64_t{64}}, std::pair{GraphKind::kDecode, int64_t{1}}}) {
    both.push_back({.kind = kind,
                    .bucket = bucket,
                    .capacity = 512,
                    .weights = weights,
                    .slots = 1,
                    .window = 128});
  }
  return both;
}

// Emits and compiles (into an empty cache) `options`' graphs of `config` on `device`.
void compile_all(device::Device& device, const ModelConfig& config,
                 std::vector<models::GraphOptions> options, const std::string& model,
                 const std::string& label) {
  const models::Architecture& architecture = models::architecture_for(config);
  std::vector<device::GraphSource> sources;
  for (const models::GraphOptions& graph : options) {
    const std::string name = models::graph_name(graph);
    sources.push_back({name, architecture.emit(config, graph).mlir, models::module_name(graph.kind),
                       fmt::format("{}-{}.{}.mlir", model, label, name)});
  }
  std::vector<device::GraphLoad> loads;
  const auto start = std::chrono::steady_clock::now();
  try {
    device.load(sources, loads);
  } catch (const Error& e) {
    ADD_FAILURE() << label << ": " << e.what();
    return;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(loads.size(), sources.size());
  for (const device::GraphLoad& load : loads) {
    EXPECT_FALSE(load.cached) << load.graph << " came from the cache, not the compiler";
  }
  std::cout << fmt::format("{} {} {}: {} graphs compiled in {:.1f} s\n", device.runtime(), model,
                           label, loads.size(), took.count());
}

// One IREE device (and its lowering) per test process, opened for the first test of a suite.
class IreeGraphs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (auto missing = testing::missing_runtime("iree", 1)) {
      skip_reason_ = new std::string(*missing);
      return;
    }
    device::DeviceOptions options;
    options.threads = 1;
    options.compile_cache_dir = process_dir() / "iree-cache";
    backends::Runtime runtime = backends::open_runtime("iree", options, {});
    device_ = runtime.device.release();
    lowering_ = runtime.lowering.release();
  }
  static void TearDownTestSuite() {
    delete device_;
    device_ = nullptr;
    delete lowering_;
    lowering_ = nullptr;
    delete skip_reason_;
    skip_reason_ = nullptr;
    fs::remove_all(process_dir());
  }

  static device::Device* device_;
  static lowering::Lowering* lowering_;  // IREE's, the kernels' cases
  static std::string* skip_reason_;
};
device::Device* IreeGraphs::device_ = nullptr;
lowering::Lowering* IreeGraphs::lowering_ = nullptr;
std::string* IreeGraphs::skip_reason_ = nullptr;

class IreeLargeGraphs : public IreeGraphs, public ::testing::WithParamInterface<Case> {};

TEST_P(IreeLargeGraphs, PrefillAndDecodeCompile) {
  if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  const Case& c = GetParam();
  ModelConfig config = one_b_config(c.stored);
  std::vector<models::GraphOptions> options = graphs(c.weights);
  if (c.weights == WeightType::kAuto) {
    // With the kernel: the graphs as IREE's lowering has the executor emit them (the kernels'
    // products and attention, codes in row pairs); without: the portable StableHLO.
    if (c.kernel &&
        lowering_->planar_kernel(lowering::Phase::kDecode, lowering::Math::kExact) == nullptr) {
      GTEST_SKIP() << "this CPU does not run the planar kernel (the _no_kernel cases cover it)";
    }
    for (models::GraphOptions& graph : options) graph.lowering = c.kernel ? lowering_ : nullptr;
  }
  compile_all(*device_, config, options, "llama-3.2-1b", c.name);
}

INSTANTIATE_TEST_SUITE_P(Llama32_1B, IreeLargeGraphs, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// Every family, at the config of a real published model of it: tests/data/models/real_size
// (README.md there names each model). Each family's graphs differ from Llama's in their norms,
// activations, biases, attention (windows, softcaps, q/k norms), experts and logit transforms.
std::vector<fs::path> real_size_configs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(testing::test_data("models/real_size"))) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// gtest names: letters, digits and underscores.
std::string test_name(std::string text) {
  for (char& ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) ch = '_';
  }
  return text;
}

// The published model with only the layers that hold every kind of layer it has (sliding or
// full attention or a short convolution, with or without RoPE): more layers repeat the same
// dispatches and only add compile time.
ModelConfig real_size_config(const fs::path& file, const std::optional<DType>& stored,
                             std::optional<DType> experts = std::nullopt) {
  ModelConfig config = config_of(file.stem().string(), testing::read_text(file));
  auto kind = [&](int64_t layer) {
    const auto index = static_cast<size_t>(layer);
    return std::pair{index < config.layer_types.size() ? config.layer_types[index] : "",
                     config.skips_rope(layer)};
  };
  std::set<std::pair<std::string, bool>> all_kinds, kinds;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) all_kinds.insert(kind(layer));
  int64_t layers = 0;
  while (layers < 2 || kinds != all_kinds) kinds.insert(kind(layers++));
  config.num_layers = std::min(layers, config.num_layers);
  const auto kept = static_cast<size_t>(config.num_layers);
  if (config.layer_types.size() > kept) config.layer_types.resize(kept);
  if (config.rope_skipped.size() > kept) config.rope_skipped.resize(kept);
  if (stored) store_matrices_as(config, *stored, experts);
  return config;
}

// How a user's file keeps the weights: an HF directory as published (bf16, kept so), or a GGUF
// of 4-bit blocks (Q4_0: any row of 32s; its planes go to the kernel where the CPU runs it); and
// what runs it: generate's graphs (graphs() above), or `serve`'s beyond those (its defaults:
// 4 slots decoded together, 4 short prompts' chunks of 16 prefilled together), from the HF
// directory.
struct FamilyCase {
  fs::path config;
  std::string form;  // "hf_bf16", "gguf_q4_0", "serve_hf_bf16" or "gguf_mxfp4" (gpt-oss)
};
void PrintTo(const FamilyCase& c, std::ostream* out) {
  *out << c.config.stem().string() << " " << c.form;
}

std::vector<FamilyCase> family_cases() {
  std::vector<FamilyCase> all;
  for (const fs::path& file : real_size_configs()) {
    // Granite 4.0-H tiny keeps six layers of 64 experts (its first attention layer is the sixth):
    // 3.5 minutes for three forms. Its Mamba layers are h-micro's in every form and its mixture
    // OLMoE's, so it compiles as the GGUF users run only.
    if (file.stem() == "granite-4.0-h-tiny") {
      all.push_back({file, "gguf_q4_0"});
      continue;
    }
    for (const char* form : {"hf_bf16", "gguf_q4_0", "serve_hf_bf16"}) {
      all.push_back({file, form});
    }
    // gpt-oss as llama.cpp's files keep it: MXFP4 experts.
    if (file.stem().string().starts_with("gpt-oss")) all.push_back({file, "gguf_mxfp4"});
  }
  return all;
}

class IreeFamiliesAtRealSize : public IreeGraphs,
                               public ::testing::WithParamInterface<FamilyCase> {};

TEST_P(IreeFamiliesAtRealSize, PrefillAndDecodeCompile) {
  if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  const FamilyCase& c = GetParam();
  const ModelConfig config = c.form == "gguf_mxfp4"
                                 ? real_size_config(c.config, DType::kQ8_0, DType::kMXFP4)
                             : c.form == "gguf_q4_0" ? real_size_config(c.config, DType::kQ4_0)
                                                     : real_size_config(c.config, DType::kBF16);
  std::vector<models::GraphOptions> options = graphs(WeightType::kAuto);
  if (c.form == "serve_hf_bf16") {
    for (models::GraphOptions& graph : options) {
      graph.slots = 4;
      if (graph.kind == GraphKind::kPrefill) {
        graph.bucket = 16;
        graph.sequences = 4;
      } else {
        graph.bucket = 4;
      }
    }
  }
  // Speculative decoding's verify call (the CLI's default draft of 3): every row's logits and
  // their argmax, where the logit transforms of Gemma 2, Granite and Cohere come between.
  models::GraphOptions verify = options.front();
  verify.kind = GraphKind::kVerify;
  verify.bucket = 4;
  verify.sequences = 1;
  options.push_back(verify);
  for (models::GraphOptions& graph : options) graph.lowering = lowering_;  // as the executor
  compile_all(*device_, config, options, c.config.stem().string(), c.form);
}

INSTANTIATE_TEST_SUITE_P(Published, IreeFamiliesAtRealSize, ::testing::ValuesIn(family_cases()),
                         [](const auto& param_info) {
                           return test_name(param_info.param.config.stem().string() + "_" +
                                            param_info.param.form);
                         });

// XLA takes f32/bf16/f16 weights (kAuto: an f32 copy, the f32 graphs).
TEST(XlaLargeGraphs, PrefillAndDecodeCompile) {
  if (auto missing = testing::missing_runtime("xla", 1)) GTEST_SKIP() << *missing;
  device::DeviceOptions options;
  options.threads = 1;
  options.compile_cache_dir = process_dir() / "xla-cache";
  std::unique_ptr<device::Device> device = backends::open_device("xla", options, {});
  for (WeightType weights : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    compile_all(*device, one_b_config(std::nullopt), graphs(weights), "llama-3.2-1b",
                models::weight_type_name(weights));
  }
  device.reset();
  fs::remove_all(process_dir());
}

// Each family's graphs on XLA, from its HF directory (bf16), as the executor emits them there.
class XlaFamiliesAtRealSize : public ::testing::TestWithParam<fs::path> {};

TEST_P(XlaFamiliesAtRealSize, PrefillAndDecodeCompile) {
  if (auto missing = testing::missing_runtime("xla", 1)) GTEST_SKIP() << *missing;
  device::DeviceOptions options;
  options.threads = 1;
  options.compile_cache_dir = process_dir() / "xla-cache";
  backends::Runtime runtime = backends::open_runtime("xla", options, {});
  std::vector<models::GraphOptions> graphs_of_run = graphs(WeightType::kAuto);
  for (models::GraphOptions& graph : graphs_of_run) graph.lowering = runtime.lowering.get();
  compile_all(*runtime.device, real_size_config(GetParam(), DType::kBF16), graphs_of_run,
              GetParam().stem().string(), "hf_bf16");
  runtime.device.reset();
  fs::remove_all(process_dir());
}

INSTANTIATE_TEST_SUITE_P(Published, XlaFamiliesAtRealSize, ::testing::ValuesIn(real_size_configs()),
                         [](const auto& param_info) {
                           return test_name(param_info.param.stem().string());
                         });

}  // namespace
}  // namespace xlacel
