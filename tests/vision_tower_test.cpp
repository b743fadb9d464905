// The vision towers (models/vision_tower.h) against HF transformers: the tiny random Idefics3 and
// Gemma 3 models of tools/reference/vision.py (tests/data/models/idefics3_tiny,
// gemma3_vision_tiny) run on each runtime, their image features compared with
// get_image_features'; the configs they are read from (model_files/vision_config.h); and the
// towers of SmolVLM-256M and Gemma 3 4B compiled at their real size (no weights needed).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/backends.h"
#include "common/error.h"
#include "common/json_file.h"
#include "device/device.h"
#include "model_files/model_files.h"
#include "model_files/safetensors_file.h"
#include "model_files/vision_config.h"
#include "models/test_support.h"
#include "models/vision_tower.h"
#include "models/weight_loader.h"
#include "runtime_availability.h"
#include "test_paths.h"
#include "vision_graph_compile.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;
using models::WeightType;

const std::vector<std::string> kTinyModels = {"idefics3_tiny", "gemma3_vision_tiny"};

fs::path model_dir(const std::string& name) {
  return testing::test_data("models/" + name);
}

VisionConfig tiny_config(const std::string& name) {
  const fs::path config = model_dir(name) / "config.json";
  std::optional<VisionConfig> vision =
      read_vision_config(read_json_file(config.string()), config.string());
  if (!vision) throw Error(config.string() + ": no vision_config");
  return *vision;
}

Json reference(const std::string& name) {
  return read_json_file((model_dir(name) / "vision_reference.json").string());
}

template <typename T>
std::vector<T> values_of(const Json& array) {
  return array.get<std::vector<T>>();
}

// The error read_vision_config throws for `config`, or "" when it throws none.
std::string config_error(const std::string& config) {
  try {
    read_vision_config(Json::parse(config), "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// --- the configs

TEST(VisionConfig, ReadsTheTinyModels) {
  const VisionConfig idefics3 = tiny_config("idefics3_tiny");
  EXPECT_EQ(idefics3.projector, VisionProjector::kIdefics3PixelShuffle);
  EXPECT_EQ(idefics3.hidden_size, 32);
  EXPECT_EQ(idefics3.intermediate_size, 48);
  EXPECT_EQ(idefics3.num_layers, 2);
  EXPECT_EQ(idefics3.num_heads, 2);
  EXPECT_EQ(idefics3.image_size, 32);
  EXPECT_EQ(idefics3.patch_size, 4);
  EXPECT_EQ(idefics3.scale_factor, 4);
  EXPECT_EQ(idefics3.text_hidden_size, 64);
  EXPECT_EQ(idefics3.image_token_id, 299);
  EXPECT_EQ(idefics3.tokens_per_image(), 4);

  const VisionConfig gemma3 = tiny_config("gemma3_vision_tiny");
  EXPECT_EQ(gemma3.projector, VisionProjector::kGemma3AvgPool);
  EXPECT_EQ(gemma3.mm_tokens_per_image, 16);
  EXPECT_EQ(gemma3.tokens_per_image(), 16);
  EXPECT_EQ(gemma3.image_token_id, 299);
  EXPECT_DOUBLE_EQ(gemma3.projector_norm_eps, 1e-6);
  for (const std::string& name : kTinyModels) {
    const Json ref = reference(name);
    const VisionConfig config = tiny_config(name);
    EXPECT_EQ(config.tokens_per_image(), ref["tokens_per_image"].get<int64_t>()) << name;
    EXPECT_EQ(config.image_token_id, ref["image_token_id"].get<int64_t>()) << name;
  }
}

// Keys a config.json leaves out take transformers' defaults: Idefics3Config's scale_factor 2
// (SmolVLM checkpoints write 4), SiglipVisionConfig's shape, Gemma3Config's 256 tokens.
TEST(VisionConfig, DefaultsAreTransformers) {
  EXPECT_FALSE(read_vision_config(Json::parse(R"({"model_type": "llama"})"), "c").has_value());
  const auto smolvlm = read_vision_config(
      Json::parse(R"({"model_type": "smolvlm", "vision_config": {"image_size": 512,
                      "patch_size": 16}, "text_config": {"hidden_size": 576}})"),
      "c");
  ASSERT_TRUE(smolvlm.has_value());
  EXPECT_EQ(smolvlm->scale_factor, 2);
  EXPECT_EQ(smolvlm->hidden_size, 1152);
  EXPECT_EQ(smolvlm->num_heads, 16);
  EXPECT_EQ(smolvlm->image_token_id, 128257);
  EXPECT_EQ(smolvlm->tokens_per_image(), 256);
  const auto gemma3 = read_vision_config(
      Json::parse(R"({"model_type": "gemma3", "vision_config": {"image_size": 896,
                                         "patch_size": 14}})"),
      "c");
  ASSERT_TRUE(gemma3.has_value());
  EXPECT_EQ(gemma3->hidden_size, 768);
  EXPECT_EQ(gemma3->intermediate_size, 3072);
  EXPECT_EQ(gemma3->mm_tokens_per_image, 256);
  EXPECT_EQ(gemma3->image_token_id, 262144);
  EXPECT_EQ(gemma3->text_hidden_size, 2304);
}

TEST(VisionConfig, ErrorsNameTheKey) {
  EXPECT_EQ(config_error(R"({"model_type": "idefics3", "vision_config": {"patch_size": "16"}})"),
            "config.json: vision_config.patch_size must be an integer");
  EXPECT_EQ(config_error(R"({"model_type": "idefics3", "vision_config": {"hidden_size": 0}})"),
            "config.json: vision_config.hidden_size must be at least 1 (got 0)");
  EXPECT_EQ(config_error(R"({"model_type": "idefics3", "vision_config": {"hidden_act": "gelu"}})"),
            "config.json: vision_config.hidden_act 'gelu' is not supported (gelu_pytorch_tanh is)");
  EXPECT_EQ(config_error(R"({"model_type": "smolvlm", "scale_factor": 3,
                              "vision_config": {"image_size": 512, "patch_size": 16}})"),
            "config.json: scale_factor (3) must divide the 32 patches per side");
  EXPECT_EQ(config_error(R"({"model_type": "gemma3", "mm_tokens_per_image": 200,
                              "vision_config": {}})"),
            "config.json: mm_tokens_per_image (200) must be a square whose side divides the 14 "
            "patches per side");
  EXPECT_EQ(config_error(R"({"model_type": "llava", "vision_config": {}})"),
            "config.json: model_type 'llava' has a vision_config, but xlacel runs the vision "
            "towers of idefics3, smolvlm and gemma3 only");
  EXPECT_EQ(config_error(R"({"model_type": "gemma3", "vision_config": [1]})"),
            "config.json: vision_config must be an object");
}

// --- the graph's parts on the host

// Idefics3VisionEmbeddings' bucketized position ids of a full image, for every grid of 1 to 70
// patches a side, as torch computes them (the reference lists those that are not 0..n*n-1).
TEST(VisionTower, Idefics3PositionIdsAreTorchs) {
  const Json table = reference("idefics3_tiny")["bucketized_position_ids"];
  EXPECT_TRUE(table.contains("19"));  // not every grid is the identity
  for (int64_t n = 1; n <= 70; ++n) {
    std::vector<int64_t> expected(static_cast<size_t>(n * n));
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i);
    if (table.contains(std::to_string(n))) {
      expected = values_of<int64_t>(table[std::to_string(n)]);
    }
    EXPECT_EQ(models::idefics3_position_ids(n), expected) << n << " patches a side";
  }
}

// Every weight the graph takes is a tensor of the checkpoint, of that shape, and every vision
// tensor of the checkpoint is one of them.
TEST(VisionTower, WeightSpecsAreTheCheckpointsTensors) {
  for (const std::string& name : kTinyModels) {
    const SafetensorsFile file((model_dir(name) / "model.safetensors").string());
    std::set<std::string> vision_tensors;
    for (const TensorView& tensor : file.tensors()) {
      if (!tensor.name.starts_with("model.text_model.") && tensor.name != "lm_head.weight" &&
          !tensor.name.starts_with("language_model.")) {
        vision_tensors.insert(tensor.name);
      }
    }
    std::set<std::string> names, hf_names, gguf_names;
    for (const models::WeightSpec& spec :
         models::vision_weight_specs(tiny_config(name), WeightType::kF32)) {
      auto tensor = std::find_if(file.tensors().begin(), file.tensors().end(),
                                 [&](const TensorView& t) { return t.name == spec.hf_name; });
      ASSERT_NE(tensor, file.tensors().end()) << name << ": " << spec.hf_name;
      EXPECT_EQ(tensor->shape, spec.shape) << spec.hf_name;
      names.insert(spec.name);
      hf_names.insert(spec.hf_name);
      gguf_names.insert(spec.gguf_name);
      EXPECT_TRUE(spec.gguf_name.starts_with("v.") || spec.gguf_name.starts_with("mm."))
          << spec.gguf_name;
    }
    EXPECT_EQ(hf_names, vision_tensors) << name;
    EXPECT_EQ(names.size(), hf_names.size()) << name;
    EXPECT_EQ(gguf_names.size(), hf_names.size()) << name;
  }
}

TEST(VisionTower, SignatureAndGraph) {
  const VisionConfig config = tiny_config("gemma3_vision_tiny");
  const models::GraphSignature signature = models::vision_signature(config, 3);
  ASSERT_EQ(signature.inputs.size(), 1u);
  EXPECT_EQ(signature.inputs[0].name, "pixel_values");
  EXPECT_EQ(signature.inputs[0].shape, (std::vector<int64_t>{3, 3, 32, 32}));
  ASSERT_EQ(signature.outputs.size(), 1u);
  EXPECT_EQ(signature.outputs[0].name, "image_features");
  EXPECT_EQ(signature.outputs[0].shape, (std::vector<int64_t>{3, 16, 64}));
  EXPECT_TRUE(signature.caches.empty());
  EXPECT_EQ(signature.weights.size(), models::vision_weight_specs(config, WeightType::kF32).size());
  const std::string mlir = models::emit_vision_graph(config, 3, WeightType::kBF16).mlir;
  EXPECT_NE(mlir.find("module @xlacel_vision"), std::string::npos);
  EXPECT_NE(mlir.find("func.func @main(%pixel_values: tensor<3x3x32x32xf32>"), std::string::npos);
  EXPECT_NE(mlir.find("%v1_fc2: tensor<32x48xbf16>"), std::string::npos);
  EXPECT_NE(mlir.find("-> tensor<3x16x64xf32>"), std::string::npos);
  EXPECT_EQ(mlir.find("custom_call"), std::string::npos);
}

// --- against HF, on each runtime

struct Features {
  std::vector<float> values;
  double seconds = 0;
};

// The tower of `name` for its reference images, compiled and run on `device`.
Features run_tower(device::Device& device, const std::string& name, const Json& ref) {
  const VisionConfig config = tiny_config(name);
  const auto images = ref["images"]["shape"][0].get<int64_t>();
  const ModelFiles files = ModelFiles::open(model_dir(name).string());
  const models::GraphSignature signature = models::vision_signature(config, images);
  std::vector<device::BufferPtr> buffers;
  const std::vector<float> pixels = values_of<float>(ref["images"]["pixel_values"]);
  buffers.push_back(device.upload(std::as_bytes(std::span(pixels)), stablehlo::ElementType::kF32,
                                  signature.inputs[0].shape));
  for (const models::WeightSpec& spec : signature.weights) {
    const models::HostTensor tensor = models::prepare_weight(files, spec);
    buffers.push_back(device.upload(tensor.bytes, spec.element, spec.shape));
  }
  const device::GraphSource source{"vision-" + name,
                                   models::emit_vision_graph(config, images, WeightType::kF32).mlir,
                                   "xlacel_vision", name + ".vision.mlir"};
  std::vector<device::GraphLoad> loads;
  std::unique_ptr<device::Executable> executable =
      std::move(device.load(std::span(&source, 1), loads).at(0));
  std::vector<device::Buffer*> arguments;
  for (const device::BufferPtr& buffer : buffers) arguments.push_back(buffer.get());
  const auto start = std::chrono::steady_clock::now();
  std::vector<device::BufferPtr> results = device.execute(*executable, arguments);
  Features out;
  out.values.resize(
      static_cast<size_t>(images * config.tokens_per_image() * config.text_hidden_size));
  device.read(*results.at(0), std::as_writable_bytes(std::span(out.values)));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

struct TowerCase {
  std::string runtime;
  std::string model;
};
void PrintTo(const TowerCase& c, std::ostream* out) {
  *out << c.runtime << " " << c.model;
}

class VisionTowerOnRuntime : public ::testing::TestWithParam<TowerCase> {};

TEST_P(VisionTowerOnRuntime, MatchesHfImageFeatures) {
  const TowerCase& c = GetParam();
  if (auto missing = testing::missing_runtime(c.runtime, 1)) GTEST_SKIP() << *missing;
  std::unique_ptr<device::Device> device = testing::cpu_device(c.runtime);
  const Json ref = reference(c.model);
  const Features got = run_tower(*device, c.model, ref);
  const std::vector<float> expected = values_of<float>(ref["image_features"]["values"]);
  ASSERT_EQ(got.values.size(), expected.size());
  double max_error = 0, max_value = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    max_error = std::max(max_error, std::abs(double{got.values[i]} - expected[i]));
    max_value = std::max(max_value, std::abs(double{expected[i]}));
  }
  std::cout << fmt::format(
      "{} {}: max |error| {:.3g} of max |value| {:.3g} ({:.2g} relative), "
      "{} features, run {:.3f} s\n",
      c.runtime, c.model, max_error, max_value, max_error / max_value, expected.size(),
      got.seconds);
  EXPECT_LT(max_error, 1e-4 * max_value);
}

std::vector<TowerCase> tower_cases() {
  std::vector<TowerCase> cases;
  for (const std::string& runtime : backends::runtime_names()) {
    for (const std::string& model : kTinyModels) cases.push_back({runtime, model});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Tiny, VisionTowerOnRuntime, ::testing::ValuesIn(tower_cases()),
                         [](const auto& param_info) {
                           return param_info.param.runtime + "_" + param_info.param.model;
                         });

// --- at real size: compiled only (no weights)

// The towers of published models, their config.json's vision keys.
constexpr const char* kSmolVlm256M = R"({
  "model_type": "smolvlm", "scale_factor": 4, "image_token_id": 49190,
  "text_config": {"model_type": "llama", "hidden_size": 576},
  "vision_config": {"model_type": "smolvlm_vision", "hidden_size": 768, "intermediate_size": 3072,
                    "num_hidden_layers": 12, "num_attention_heads": 12, "image_size": 512,
                    "patch_size": 16, "layer_norm_eps": 1e-06}
})";
constexpr const char* kGemma3_4B = R"({
  "model_type": "gemma3", "mm_tokens_per_image": 256, "image_token_index": 262144,
  "text_config": {"model_type": "gemma3_text", "hidden_size": 2560},
  "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                    "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
                    "image_size": 896, "patch_size": 14, "layer_norm_eps": 1e-06,
                    "vision_use_head": false}
})";

struct RealSizeCase {
  std::string name;
  const char* config;
  std::string runtime;
};
void PrintTo(const RealSizeCase& c, std::ostream* out) {
  *out << c.name << " " << c.runtime;
}

class VisionTowerAtRealSize : public ::testing::TestWithParam<RealSizeCase> {};

// One image's graph, as the executor compiles it (f32 weights), into a fresh compile cache.
TEST_P(VisionTowerAtRealSize, Compiles) {
  const RealSizeCase& c = GetParam();
  if (auto missing = testing::missing_runtime(c.runtime, 1)) GTEST_SKIP() << *missing;
  const VisionConfig config = *read_vision_config(Json::parse(c.config), c.name);
  const device::GraphSource source{"vision-i1-f32",
                                   models::emit_vision_graph(config, 1, WeightType::kF32).mlir,
                                   "xlacel_vision", c.name + ".vision-i1-f32.mlir"};
  const std::optional<double> seconds = testing::compile_fresh(c.runtime, source, "vision_tower");
  ASSERT_TRUE(seconds.has_value());
  std::cout << fmt::format("{} {}: {} layers, {} tokens of {} per image, compiled in {:.1f} s\n",
                           c.runtime, c.name, config.num_layers, config.tokens_per_image(),
                           config.text_hidden_size, *seconds);
}

INSTANTIATE_TEST_SUITE_P(Published, VisionTowerAtRealSize,
                         ::testing::Values(RealSizeCase{"SmolVLM_256M", kSmolVlm256M, "iree"},
                                           RealSizeCase{"SmolVLM_256M", kSmolVlm256M, "xla"},
                                           RealSizeCase{"Gemma3_4B", kGemma3_4B, "iree"},
                                           RealSizeCase{"Gemma3_4B", kGemma3_4B, "xla"}),
                         [](const auto& param_info) {
                           return param_info.param.name + "_" + param_info.param.runtime;
                         });

}  // namespace
}  // namespace xlacel
