// A vision-language model as llama.cpp's file pair, a GGUF text model and its image encoder file
// (mmproj), opened with ModelFiles::open(model, mmproj): the tiny Idefics3 and Gemma 3 models of
// tools/reference/vision.py converted by the pinned llama.cpp's convert_hf_to_gguf.py (with and
// without --mmproj; tools/reference/converted_vlm.py, into tests/data/models/converted/). The
// pair gives the HF directory's vision config and image processor settings, every vision weight
// the directory's (Gemma 3's input projection as the F16 the converter forces), and on each
// runtime the same image features bit for bit; Idefics3's greedy tokens with an image equal HF's.
// (Gemma 3's decoder lets image tokens attend to each other, which xlacel does not run yet: its
// features only.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backends.h"
#include "common/error.h"
#include "common/float16.h"
#include "common/json_file.h"
#include "device/device.h"
#include "engine/engine.h"
#include "expect_error.h"
#include "model_files/model_files.h"
#include "model_files/vision_config.h"
#include "models/vision_tower.h"
#include "models/weight_loader.h"
#include "runtime_availability.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using models::WeightType;

const std::vector<std::string> kTinyModels = {"idefics3_tiny", "gemma3_vision_tiny"};

// tests/data/models/<name><file>: the HF directory, or a file in it.
std::string model_dir(const std::string& name, const std::string& file = "") {
  return testing::test_data("models/" + name + file).string();
}
std::string text_gguf(const std::string& name) {
  return model_dir("converted/" + name, ".gguf");
}
std::string mmproj_gguf(const std::string& name) {
  return model_dir("converted/" + name, ".mmproj.gguf");
}
ModelFiles open_pair(const std::string& name) {
  return ModelFiles::open(text_gguf(name), mmproj_gguf(name));
}
Json reference(const std::string& name) {
  return read_json_file(model_dir(name, "/vision_reference.json"));
}

// The weight the graph takes, as f32 values (the vision graph's weights are f32).
std::vector<float> weight_values(const ModelFiles& files, const models::WeightSpec& spec) {
  const models::HostTensor tensor = models::prepare_weight(files, spec);
  EXPECT_EQ(spec.element, stablehlo::ElementType::kF32) << spec.name;
  std::vector<float> values(tensor.bytes.size() / sizeof(float));
  std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
  return values;
}

// The converter stores Gemma 3's input projection as F16 whatever the output type
// (Gemma3VisionModel.tensor_force_quant): the HF value it holds is the F16 nearest.
bool stored_as_f16(const models::WeightSpec& spec) {
  return spec.gguf_name == "mm.input_projection.weight";
}
std::vector<float> through_f16(std::vector<float> values) {
  for (float& v : values) v = half_to_float(float_to_half(v));
  return values;
}

// The converter stores Gemma 3's soft_emb_norm as w + 1 (in f32), which the loader reads back as
// (w + 1) - 1 (WeightSpec::gguf_add): not always w.
std::vector<float> through_gguf_add(std::vector<float> values, float add) {
  for (float& v : values) v = (v - add) + add;
  return values;
}

// Every weight of the HF directory's tower as the pair holds it.
std::vector<std::vector<float>> hf_weights_as_the_pair_holds_them(const std::string& name,
                                                                  const VisionConfig& config) {
  const ModelFiles hf = ModelFiles::open(model_dir(name));
  std::vector<std::vector<float>> weights;
  for (const models::WeightSpec& spec : models::vision_weight_specs(config, WeightType::kF32)) {
    std::vector<float> values = through_gguf_add(weight_values(hf, spec), spec.gguf_add);
    weights.push_back(stored_as_f16(spec) ? through_f16(std::move(values)) : std::move(values));
  }
  return weights;
}

std::vector<std::vector<float>> pair_weights(const ModelFiles& pair) {
  std::vector<std::vector<float>> weights;
  for (const models::WeightSpec& spec :
       models::vision_weight_specs(*pair.config().vision, WeightType::kF32)) {
    weights.push_back(weight_values(pair, spec));
  }
  return weights;
}

// --- the pair's config, settings and weights

TEST(VisionFiles, ThePairGivesTheDirectorysVisionConfig) {
  for (const std::string& name : kTinyModels) {
    const ModelFiles hf = ModelFiles::open(model_dir(name));
    const ModelFiles pair = open_pair(name);
    EXPECT_EQ(pair.format(), ModelFiles::Format::kGguf);
    EXPECT_EQ(pair.path(), text_gguf(name));
    ASSERT_NE(pair.mmproj(), nullptr);
    ASSERT_TRUE(hf.config().vision && pair.config().vision) << name;
    const VisionConfig& want = *hf.config().vision;
    const VisionConfig& got = *pair.config().vision;
    EXPECT_EQ(got.projector, want.projector) << name;
    EXPECT_EQ(got.hidden_size, want.hidden_size) << name;
    EXPECT_EQ(got.intermediate_size, want.intermediate_size) << name;
    EXPECT_EQ(got.num_layers, want.num_layers) << name;
    EXPECT_EQ(got.num_heads, want.num_heads) << name;
    EXPECT_EQ(got.num_channels, want.num_channels) << name;
    EXPECT_EQ(got.image_size, want.image_size) << name;
    EXPECT_EQ(got.patch_size, want.patch_size) << name;
    // The mmproj keeps the epsilon as f32.
    EXPECT_EQ(got.layer_norm_eps, double{static_cast<float>(want.layer_norm_eps)}) << name;
    EXPECT_EQ(got.scale_factor, want.scale_factor) << name;
    EXPECT_EQ(got.mm_tokens_per_image, want.mm_tokens_per_image) << name;
    EXPECT_EQ(got.text_hidden_size, want.text_hidden_size) << name;
    EXPECT_EQ(got.image_token_id, want.image_token_id) << name;
    EXPECT_EQ(got.tokens_per_image(), reference(name)["tokens_per_image"].get<int64_t>()) << name;
    // The decoder is the directory's too.
    EXPECT_EQ(pair.config().hidden_size, hf.config().hidden_size) << name;
    EXPECT_EQ(pair.config().num_layers, hf.config().num_layers) << name;
    EXPECT_EQ(pair.config().vocab_size, hf.config().vocab_size) << name;
  }
  EXPECT_EQ(open_pair("idefics3_tiny").config().vision->model_type, "idefics3");
  EXPECT_EQ(open_pair("gemma3_vision_tiny").config().vision->model_type, "gemma3");
  // One file alone has no vision tower, nor a processor's settings.
  const ModelFiles text = ModelFiles::open(text_gguf("idefics3_tiny"));
  EXPECT_FALSE(text.config().vision.has_value());
  EXPECT_EQ(text.mmproj(), nullptr);
  EXPECT_FALSE(text.preprocessor_config().has_value());
}

// What the image processors read, from the mmproj's keys (the settings converted_vlm.py gave the
// converter, but for the keys the mmproj does not keep, whose defaults are the processors').
TEST(VisionFiles, ThePairGivesTheImageProcessorSettings) {
  const Json idefics3 = *open_pair("idefics3_tiny").preprocessor_config();
  EXPECT_EQ(idefics3, Json::parse(R"({"image_processor_type": "Idefics3ImageProcessor",
                                      "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                                      "max_image_size": {"longest_edge": 32},
                                      "size": {"longest_edge": 128}})"));
  const Json gemma3 = *open_pair("gemma3_vision_tiny").preprocessor_config();
  EXPECT_EQ(gemma3, Json::parse(R"({"image_processor_type": "Gemma3ImageProcessor",
                                    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                                    "size": {"height": 32, "width": 32},
                                    "image_seq_length": 16})"));
  // An HF directory's own file, where it has one.
  EXPECT_FALSE(ModelFiles::open(model_dir("idefics3_tiny")).preprocessor_config());
}

// Every weight of the tower read from the pair (by its gguf_name: unpermuted, the patch
// embedding as [D, C, p, p], Gemma 3's norm less the 1 the converter added) is the directory's,
// bit for bit, but for what the converter rounds: Gemma 3's input projection is its F16 rounding
// and its norm (w + 1) - 1.
TEST(VisionFiles, EveryVisionWeightIsTheDirectorys) {
  for (const std::string& name : kTinyModels) {
    const ModelFiles pair = open_pair(name);
    const std::vector<models::WeightSpec> specs =
        models::vision_weight_specs(*pair.config().vision, WeightType::kF32);
    const auto want = hf_weights_as_the_pair_holds_them(name, *pair.config().vision);
    const auto got = pair_weights(pair);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(0, std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)))
          << name << ": " << specs[i].gguf_name;
      EXPECT_EQ(got[i].size(), want[i].size()) << name << ": " << specs[i].gguf_name;
    }
  }
}

TEST(VisionFiles, ErrorsNameTheFile) {
  const std::string text = text_gguf("idefics3_tiny");
  testing::expect_error(
      [&] { ModelFiles::open(model_dir("idefics3_tiny"), mmproj_gguf("idefics3_tiny")); },
      model_dir("idefics3_tiny") +
          ": is an HF directory: an mmproj file goes with a GGUF text model (a directory holds "
          "its vision tower itself)");
  testing::expect_error([&] { ModelFiles::open(text, text); },
                        text +
                            ": general.architecture is 'llama': not llama.cpp's image encoder "
                            "(mmproj) file");
  testing::expect_error([&] { ModelFiles::open(text, text + ".absent"); },
                        text + ".absent: no such file or directory");
  // Gemma 3's projector needs its image token, which Idefics3's vocabulary lacks.
  testing::expect_error([&] { ModelFiles::open(text, mmproj_gguf("gemma3_vision_tiny")); },
                        text +
                            ": the vocabulary has no image token '<image_soft_token>' (the "
                            "mmproj's projector needs it)");
}

// --- on each runtime

// The tower's graph for the reference images, loaded once on a device of one thread; features()
// runs it with a set of weights (vision_weight_specs order).
class Tower {
 public:
  Tower(const std::string& runtime, const VisionConfig& config, const Json& ref)
      : config_(config),
        images_(ref["images"]["shape"][0].get<int64_t>()),
        pixels_(ref["images"]["pixel_values"].get<std::vector<float>>()) {
    device::DeviceOptions options;
    options.threads = 1;
    device_ = backends::open_device(runtime, options, {});
    const device::GraphSource graph{
        "vision-files", models::emit_vision_graph(config, images_, WeightType::kF32).mlir,
        "xlacel_vision", "vision-files.mlir"};
    std::vector<device::GraphLoad> loads;
    executable_ = std::move(device_->load(std::span(&graph, 1), loads).at(0));
  }

  std::vector<float> features(const std::vector<std::vector<float>>& weights) {
    const models::GraphSignature signature = models::vision_signature(config_, images_);
    std::vector<device::BufferPtr> owned;
    std::vector<device::Buffer*> arguments;
    auto upload = [&](const std::vector<float>& values, const std::vector<int64_t>& shape) {
      owned.push_back(
          device_->upload(std::as_bytes(std::span(values)), stablehlo::ElementType::kF32, shape));
      arguments.push_back(owned.back().get());
    };
    upload(pixels_, signature.inputs.at(0).shape);
    for (std::size_t i = 0; i < weights.size(); ++i) upload(weights[i], signature.weights[i].shape);
    const std::vector<device::BufferPtr> results = device_->execute(*executable_, arguments);
    std::vector<float> out(
        static_cast<std::size_t>(images_ * config_.tokens_per_image() * config_.text_hidden_size));
    device_->read(*results.at(0), std::as_writable_bytes(std::span(out)));
    return out;
  }

 private:
  VisionConfig config_;
  int64_t images_;
  std::vector<float> pixels_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<device::Executable> executable_;
};

// (runtime, model)
class VisionFilesOnRuntime : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
};

// The pair's features equal, bit for bit, those of the directory's weights as the pair holds
// them, on the same runtime; and lie near HF's (vision_tower_test holds the directory's own).
TEST_P(VisionFilesOnRuntime, FeaturesAreTheDirectorys) {
  const auto& [runtime, model] = GetParam();
  if (auto missing = testing::missing_runtime(runtime, 1)) GTEST_SKIP() << *missing;
  const Json ref = reference(model);
  const ModelFiles pair = open_pair(model);
  const VisionConfig& config = *pair.config().vision;
  Tower tower(runtime, config, ref);
  const std::vector<float> got = tower.features(pair_weights(pair));
  const std::vector<float> want = tower.features(hf_weights_as_the_pair_holds_them(model, config));
  ASSERT_EQ(got.size(), want.size());
  const auto hf = ref["image_features"]["values"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), hf.size());
  double max_difference = 0, max_error = 0, max_value = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    max_difference = std::max(max_difference, std::abs(double{got[i]} - want[i]));
    max_error = std::max(max_error, std::abs(double{got[i]} - hf[i]));
    max_value = std::max(max_value, std::abs(double{hf[i]}));
  }
  std::cout << fmt::format(
      "{} {}: pair vs directory max |difference| {:.3g}; vs HF max |error| {:.3g} of max "
      "|value| {:.3g}\n",
      runtime, model, max_difference, max_error, max_value);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  // Gemma 3's F16 input projection (a relative rounding of up to 2^-11 per weight) moves its
  // features from HF's by 1.8e-4 of their largest; the directory's own lie within 1e-4.
  const bool f16_projection = config.projector == VisionProjector::kGemma3AvgPool;
  EXPECT_LT(max_error, (f16_projection ? 1e-3 : 1e-4) * max_value);
}

INSTANTIATE_TEST_SUITE_P(Tiny, VisionFilesOnRuntime,
                         ::testing::Combine(::testing::ValuesIn(backends::runtime_names()),
                                            ::testing::ValuesIn(kTinyModels)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  std::get<1>(param_info.param);
                         });

class VisionFilesEngine : public ::testing::TestWithParam<std::string> {};

// Greedy tokens of the Idefics3 pair with an image, through the scheduler as a request's
// image_pixels, equal HF's (vision_reference.json "generation").
TEST_P(VisionFilesEngine, Idefics3PairWithAnImageMatchesHf) {
  const std::string& runtime = GetParam();
  if (auto missing = testing::missing_runtime(runtime, 1)) GTEST_SKIP() << *missing;
  const Json ref = reference("idefics3_tiny");
  const Json& images = ref["images"];
  const auto per_image = static_cast<std::size_t>(images["shape"][1].get<int64_t>() *
                                                  images["shape"][2].get<int64_t>() *
                                                  images["shape"][3].get<int64_t>());
  const auto all_pixels = images["pixel_values"].get<std::vector<float>>();
  engine::EngineOptions options;
  options.runtime = runtime;
  options.executor.slots = 2;
  options.executor.capacity = 64;
  options.executor.prefill_bucket = 8;
  options.executor.small_prefill_bucket = 8;
  engine::Engine engine(open_pair("idefics3_tiny"), options);
  engine::Scheduler& scheduler = engine.scheduler();
  for (const Json& generation : ref["generation"]) {
    const auto want = generation["output_ids"].get<std::vector<int32_t>>();
    engine::RequestOptions request;
    request.max_tokens = static_cast<int64_t>(want.size());
    const auto first = all_pixels.begin() + static_cast<std::ptrdiff_t>(
                                                generation["image"].get<std::size_t>() * per_image);
    request.image_pixels = std::make_shared<const std::vector<float>>(
        first, first + static_cast<std::ptrdiff_t>(per_image));
    std::vector<int32_t> got;
    scheduler.submit(generation["prompt_ids"].get<std::vector<int32_t>>(), request,
                     [&](const engine::TokenEvent& event) {
                       if (event.token >= 0) got.push_back(event.token);
                     });
    scheduler.run_until_idle();
    EXPECT_EQ(got, want) << runtime << " " << generation["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(Runtimes, VisionFilesEngine,
                         ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace xlacel
