// Qwen2.5-VL's vision tower (models/vision_tower.h, qwen_vision_*.cpp) against HF transformers:
// the tiny random Qwen2_5_VLForConditionalGeneration of tools/reference/vision_qwen.py
// (tests/data/models/qwen2_5_vl_tiny) run on each runtime for three grids (windows that tile
// the image, partial edge windows, two frames), its features compared with get_image_features';
// the grid's constants (position ids, windows) against transformers' vision_utils; the configs
// (model_files/vision_config.h); and Qwen2.5-VL-3B's tower compiled at its real size.
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

fs::path model_dir() {
  return testing::test_data("models/qwen2_5_vl_tiny");
}

VisionConfig read_config(const Json& json, const std::string& where) {
  std::optional<VisionConfig> vision = read_vision_config(json, where);
  if (!vision) throw Error(where + ": no vision_config");
  return *vision;
}

VisionConfig tiny_config() {
  const fs::path config = model_dir() / "config.json";
  return read_config(read_json_file(config.string()), config.string());
}

const Json& reference() {
  static const Json ref = read_json_file((model_dir() / "vision_reference.json").string());
  return ref;
}

VisionGrid grid_of(const Json& image) {
  const auto thw = image["grid_thw"].get<std::vector<int64_t>>();
  return {thw.at(0), thw.at(1), thw.at(2)};
}

std::string config_error(const std::string& config) {
  try {
    read_vision_config(Json::parse(config), "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Qwen2.5-VL-3B-Instruct's config.json as published (the text keys flat, the vision keys of
// Qwen's original config class: in_chans, no rope_parameters).
constexpr const char* kQwen2_5Vl3B = R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
  "hidden_size": 2048, "num_hidden_layers": 36, "vocab_size": 151936,
  "vision_start_token_id": 151652, "vision_end_token_id": 151653, "vision_token_id": 151654,
  "image_token_id": 151655, "video_token_id": 151656,
  "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280,
                    "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
                    "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2,
                    "spatial_patch_size": 14, "window_size": 112,
                    "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
                    "temporal_patch_size": 2},
  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}
})";

// --- the configs

TEST(QwenVisionConfig, ReadsTheTinyModel) {
  const VisionConfig c = tiny_config();
  EXPECT_EQ(c.projector, VisionProjector::kQwen2VlMerger);
  EXPECT_TRUE(c.per_grid());
  EXPECT_EQ(c.model_type, "qwen2_5_vl");
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.intermediate_size, 48);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_channels, 3);
  EXPECT_EQ(c.patch_size, 4);
  EXPECT_EQ(c.temporal_patch_size, 2);
  EXPECT_EQ(c.spatial_merge_size, 2);
  EXPECT_EQ(c.window_size, 16);
  EXPECT_EQ(c.fullatt_block_indexes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(c.text_hidden_size, 64);
  EXPECT_EQ(c.patch_values(), 96);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000);
  const Json& ref = reference();
  EXPECT_EQ(c.text_hidden_size, ref["out_hidden_size"].get<int64_t>());
  EXPECT_EQ(c.image_token_id, ref["image_token_id"].get<int64_t>());
  EXPECT_EQ(c.video_token_id, ref["video_token_id"].get<int64_t>());
  EXPECT_EQ(c.vision_start_token_id, ref["vision_start_token_id"].get<int64_t>());
  EXPECT_EQ(c.vision_end_token_id, ref["vision_end_token_id"].get<int64_t>());
  for (const Json& image : ref["images"]) {
    EXPECT_EQ(c.tokens_for_grid(grid_of(image)), image["tokens"].get<int64_t>());
  }
}

TEST(QwenVisionConfig, ReadsThePublishedConfig) {
  const VisionConfig c = read_config(Json::parse(kQwen2_5Vl3B), "3B");
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.hidden_size, 1280);
  EXPECT_EQ(c.head_dim(), 80);
  EXPECT_EQ(c.num_channels, 3);
  EXPECT_EQ(c.text_hidden_size, 2048);
  EXPECT_EQ(c.image_token_id, 151655);
  EXPECT_EQ(c.vision_start_token_id, 151652);
  EXPECT_EQ(c.patch_values(), 3 * 2 * 14 * 14);
  EXPECT_EQ(c.tokens_for_grid({1, 32, 32}), 256);  // a 448 x 448 image
  EXPECT_EQ(c.tokens_for_grid({1, 36, 20}), 180);
  // The fixed-size families count as before, any grid alike.
  const VisionConfig gemma3 =
      read_config(Json::parse(R"({"model_type": "gemma3", "vision_config": {"image_size": 896,
                      "patch_size": 14}})"),
                  "gemma3");
  EXPECT_FALSE(gemma3.per_grid());
  EXPECT_EQ(gemma3.tokens_for_grid({}), gemma3.tokens_per_image());
}

TEST(QwenVisionConfig, ErrorsNameTheKeyOrTheGrid) {
  EXPECT_EQ(config_error(R"({"model_type": "qwen2_5_vl", "vision_config": {"depth": 0}})"),
            "config.json: vision_config.depth must be at least 1 (got 0)");
  EXPECT_EQ(config_error(R"({"model_type": "qwen2_5_vl", "vision_config": {"hidden_act":
                              "quick_gelu"}})"),
            "config.json: vision_config.hidden_act 'quick_gelu' is not supported (silu is)");
  EXPECT_EQ(config_error(R"({"model_type": "qwen2_5_vl", "vision_config": {"depth": 4,
                              "fullatt_block_indexes": [1, 4]}})"),
            "config.json: vision_config.fullatt_block_indexes names block 4 of a depth of 4");
  EXPECT_EQ(config_error(R"({"model_type": "qwen2_5_vl", "vision_config": {"window_size": 20}})"),
            "config.json: vision_config.window_size (20) must hold patch_size x "
            "spatial_merge_size (14 x 2)");
  EXPECT_EQ(config_error(R"({"model_type": "qwen2_5_vl", "hidden_size": 2048,
                              "vision_config": {"out_hidden_size": 3584}})"),
            "config.json: vision_config.out_hidden_size (3584) must be the decoder's hidden_size "
            "(2048)");
  const VisionConfig c = tiny_config();
  EXPECT_THROW(c.tokens_per_image(), Error);
  EXPECT_THROW(c.tokens_for_grid({1, 8, 7}), Error);
  EXPECT_THROW(models::vision_signature(c, 1), Error);
  EXPECT_THROW(models::emit_vision_graph(c, 1, WeightType::kF32), Error);
}

// --- the grid's constants, as transformers' vision_utils gives them

TEST(QwenVisionTower, PositionIdsAndWindowsAreTransformers) {
  const VisionConfig c = tiny_config();
  for (const Json& image : reference()["images"]) {
    const VisionGrid grid = grid_of(image);
    std::vector<std::vector<int64_t>> ids;
    for (const auto& [h, w] : models::qwen_vision_position_ids(c, grid)) ids.push_back({h, w});
    EXPECT_EQ(ids, image["position_ids"].get<std::vector<std::vector<int64_t>>>());
    const models::QwenVisionWindows windows = models::qwen_vision_windows(c, grid);
    EXPECT_EQ(windows.window_index, image["window_index"].get<std::vector<int64_t>>());
    EXPECT_EQ(windows.cu_window_seqlens, image["cu_window_seqlens"].get<std::vector<int64_t>>());
  }
}

// Every weight is a tensor of the checkpoint (q, k and v rows of the fused qkv), and every
// visual.* tensor is read.
TEST(QwenVisionTower, WeightSpecsAreTheCheckpointsTensors) {
  const SafetensorsFile file((model_dir() / "model.safetensors").string());
  std::set<std::string> visual, read, names;
  for (const TensorView& tensor : file.tensors()) {
    if (tensor.name.starts_with("visual.")) visual.insert(tensor.name);
  }
  for (const models::WeightSpec& spec :
       models::vision_weight_specs(tiny_config(), WeightType::kF32)) {
    auto tensor = std::find_if(file.tensors().begin(), file.tensors().end(),
                               [&](const TensorView& t) { return t.name == spec.hf_name; });
    ASSERT_NE(tensor, file.tensors().end()) << spec.hf_name;
    std::vector<int64_t> shape = spec.shape;
    if (spec.hf_rows.total > 0) shape[0] = spec.hf_rows.total;
    EXPECT_EQ(tensor->shape, shape) << spec.hf_name;
    EXPECT_TRUE(spec.gguf_name.starts_with("v.") || spec.gguf_name.starts_with("mm."));
    read.insert(spec.hf_name);
    names.insert(spec.name);
  }
  EXPECT_EQ(read, visual);
  EXPECT_EQ(names.size(), models::vision_weight_specs(tiny_config(), WeightType::kF32).size());
}

TEST(QwenVisionTower, SignatureAndGraph) {
  const VisionConfig c = tiny_config();
  const models::GraphSignature signature = models::vision_signature(c, VisionGrid{1, 10, 6});
  EXPECT_EQ(signature.inputs.at(0).shape, (std::vector<int64_t>{60, 96}));
  EXPECT_EQ(signature.outputs.at(0).shape, (std::vector<int64_t>{15, 64}));
  const std::string mlir = models::emit_vision_graph(c, {1, 10, 6}, WeightType::kBF16).mlir;
  EXPECT_NE(mlir.find("func.func @main(%pixel_values: tensor<60x96xf32>"), std::string::npos);
  EXPECT_NE(mlir.find("%v_patch_embd: tensor<32x3x2x4x4xbf16>"), std::string::npos);
  EXPECT_NE(mlir.find("-> tensor<15x64xf32>"), std::string::npos);
  EXPECT_EQ(mlir.find("custom_call"), std::string::npos);
}

// --- against HF, on each runtime

// The features of reference image `image` (its own grid's graph) on `device`.
std::vector<float> run_tower(device::Device& device, const ModelFiles& files, const Json& image) {
  const VisionConfig config = tiny_config();
  const VisionGrid grid = grid_of(image);
  const models::GraphSignature signature = models::vision_signature(config, grid);
  std::vector<device::BufferPtr> buffers;
  const auto pixels = image["pixel_values"]["values"].get<std::vector<float>>();
  buffers.push_back(device.upload(std::as_bytes(std::span(pixels)), stablehlo::ElementType::kF32,
                                  signature.inputs[0].shape));
  for (const models::WeightSpec& spec : signature.weights) {
    const models::HostTensor tensor = models::prepare_weight(files, spec);
    buffers.push_back(device.upload(tensor.bytes, spec.element, spec.shape));
  }
  const std::string name = fmt::format("vision-g{}x{}x{}", grid.t, grid.h, grid.w);
  const device::GraphSource source{name,
                                   models::emit_vision_graph(config, grid, WeightType::kF32).mlir,
                                   "xlacel_vision", "qwen2_5_vl_tiny." + name + ".mlir"};
  std::vector<device::GraphLoad> loads;
  std::unique_ptr<device::Executable> executable =
      std::move(device.load(std::span(&source, 1), loads).at(0));
  std::vector<device::Buffer*> arguments;
  for (const device::BufferPtr& buffer : buffers) arguments.push_back(buffer.get());
  std::vector<device::BufferPtr> results = device.execute(*executable, arguments);
  std::vector<float> values(
      static_cast<size_t>(config.tokens_for_grid(grid) * config.text_hidden_size));
  device.read(*results.at(0), std::as_writable_bytes(std::span(values)));
  return values;
}

class QwenVisionOnRuntime : public ::testing::TestWithParam<std::string> {};

TEST_P(QwenVisionOnRuntime, MatchesHfImageFeatures) {
  const std::string& runtime = GetParam();
  if (auto missing = testing::missing_runtime(runtime, 1)) GTEST_SKIP() << *missing;
  std::unique_ptr<device::Device> device = testing::cpu_device(runtime);
  const ModelFiles files = ModelFiles::open(model_dir().string());
  for (const Json& image : reference()["images"]) {
    const std::vector<float> got = run_tower(*device, files, image);
    const auto expected = image["image_features"]["values"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), expected.size());
    double max_error = 0, max_value = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      max_error = std::max(max_error, std::abs(double{got[i]} - expected[i]));
      max_value = std::max(max_value, std::abs(double{expected[i]}));
    }
    const VisionGrid grid = grid_of(image);
    std::cout << fmt::format(
        "{} grid {}x{}x{}: max |error| {:.3g} of max |value| {:.3g} ({:.2g} "
        "relative), {} features\n",
        runtime, grid.t, grid.h, grid.w, max_error, max_value, max_error / max_value,
        expected.size());
    EXPECT_LT(max_error, 1e-4 * max_value) << grid.t << "x" << grid.h << "x" << grid.w;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, QwenVisionOnRuntime, ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& param_info) { return param_info.param; });

// --- at real size: compiled only (no weights)

// Qwen2.5-VL-3B's whole tower (32 blocks, full attention on 7, 15, 23 and 31) for a 448 x 448
// image (32 x 32 patches, 256 tokens), as the executor compiles it (f32 weights), into a fresh
// compile cache.
class QwenVisionAtRealSize : public ::testing::TestWithParam<std::string> {};

TEST_P(QwenVisionAtRealSize, Qwen2_5Vl3BCompiles) {
  const std::string& runtime = GetParam();
  if (auto missing = testing::missing_runtime(runtime, 1)) GTEST_SKIP() << *missing;
  const VisionConfig config = read_config(Json::parse(kQwen2_5Vl3B), "Qwen2.5-VL-3B");
  const VisionGrid grid{1, 32, 32};
  const device::GraphSource source{"vision-g1x32x32-f32",
                                   models::emit_vision_graph(config, grid, WeightType::kF32).mlir,
                                   "xlacel_vision", "Qwen2.5-VL-3B.vision-g1x32x32-f32.mlir"};
  const std::optional<double> seconds = testing::compile_fresh(runtime, source, "vision_qwen");
  ASSERT_TRUE(seconds.has_value());
  std::cout << fmt::format(
      "{} Qwen2.5-VL-3B: {} blocks, grid 1x32x32, {} tokens of {}, compiled in {:.1f} s\n", runtime,
      config.num_layers, config.tokens_for_grid(grid), config.text_hidden_size, *seconds);
}

INSTANTIATE_TEST_SUITE_P(Published, QwenVisionAtRealSize,
                         ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace xlacel
