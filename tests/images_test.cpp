// Image decoding and the image processors against transformers + Pillow
// (tools/reference/images.py): every test image's RGB bytes as load_image gives them, and every
// image x processor config's pixel_values bit for bit (xxh64 of the float32 bytes), with the
// family's fields; malformed files and bad configs raise Errors naming the input. Resizing alone
// is swept over several hundred random sizes and filters against Pillow
// (tools/reference/pillow_resize_sweep.py).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_file.h"
#include "images/decode.h"
#include "images/gemma3_processor.h"
#include "images/idefics3_processor.h"
#include "images/pillow_resample.h"
#include "images/qwen2_vl_processor.h"
#include "test_paths.h"

namespace xlacel::images {
namespace {

using ::xlacel::testing::test_data;

std::vector<uint8_t> read_bytes(const std::string& name) {
  std::ifstream file(test_data("images/" + name), std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

const Json& reference() {
  static const Json json = read_json_file(test_data("images/reference.json").string());
  return json;
}

std::string xxh64_hex(const void* data, size_t size) {
  return fmt::format("{:016x}", XXH64(data, size, 0));
}

const Image& decoded(const std::string& name) {
  static std::map<std::string, Image> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, decode_image(read_bytes(name), name)).first;
  return it->second;
}

TEST(Images, DecodedRgbMatchesPillow) {
  int checked = 0;
  for (const auto& [name, expected] : reference()["images"].items()) {
    SCOPED_TRACE(name);
    const Image& image = decoded(name);
    EXPECT_EQ(image.width, expected["width"].get<int>());
    EXPECT_EQ(image.height, expected["height"].get<int>());
    EXPECT_EQ(xxh64_hex(image.rgb.data(), image.rgb.size()), expected["rgb_xxh64"]);
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

ProcessedImage run(const std::string& config_name, const Image& image, const std::string& name) {
  const Json config = read_json_file(test_data("images/configs/" + config_name).string());
  if (config_name.starts_with("smolvlm"))
    return Idefics3Processor::from_config(config).process(image);
  if (config_name.starts_with("gemma3")) return Gemma3Processor::from_config(config).process(image);
  return Qwen2VLProcessor::from_config(config).process(image, name);
}

class ProcessorCases : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessorCases, PixelValuesAreBitEqualToTransformers) {
  int checked = 0;
  for (const Json& expected : reference()["cases"]) {
    if (expected["config"] != GetParam()) continue;
    const std::string name = expected["image"];
    SCOPED_TRACE(name);
    ++checked;
    if (expected.contains("error")) {
      try {
        run(GetParam(), decoded(name), name);
        ADD_FAILURE() << "no Error, transformers raised: " << expected["error"];
      } catch (const Error& error) {
        EXPECT_EQ(std::string(error.what()), name + ": " + expected["error"].get<std::string>());
      }
      continue;
    }
    ProcessedImage out = run(GetParam(), decoded(name), name);
    EXPECT_EQ(Json(out.shape), expected["shape"]);
    ASSERT_GE(out.pixel_values.size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(out.pixel_values[i], expected["first"][i].get<float>()) << "element " << i;
    }
    EXPECT_EQ(xxh64_hex(out.pixel_values.data(), out.pixel_values.size() * sizeof(float)),
              expected["xxh64"]);
    if (expected.contains("rows")) {
      EXPECT_EQ(out.rows, expected["rows"].get<int>());
      EXPECT_EQ(out.cols, expected["cols"].get<int>());
    }
    if (expected.contains("grid_thw")) {
      EXPECT_EQ(Json(out.grid_thw), expected["grid_thw"]);
    }
    if (expected.contains("num_crops")) {
      EXPECT_EQ(out.num_crops, expected["num_crops"].get<int>());
    }
  }
  EXPECT_GE(checked, 30);
}

INSTANTIATE_TEST_SUITE_P(Configs, ProcessorCases,
                         ::testing::Values("smolvlm_256m.json", "gemma3_4b.json",
                                           "gemma3_pan_and_scan.json", "qwen2_5_vl_3b.json",
                                           "qwen2_5_vl_small.json"),
                         [](const auto& param_info) {
                           return param_info.param.substr(0, param_info.param.find('.'));
                         });

// tools/reference/pillow_resize_sweep.py's source pixels: byte k of case c is the top byte of
// splitmix64's finaliser over ((c << 32) + k) * golden ratio.
std::vector<uint8_t> sweep_source_bytes(uint64_t case_index, size_t count) {
  std::vector<uint8_t> bytes(count);
  for (size_t k = 0; k < count; ++k) {
    uint64_t z = ((case_index << 32) + k) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    bytes[k] = uint8_t((z ^ (z >> 31)) >> 56);
  }
  return bytes;
}

TEST(Images, ResizeIsBitEqualToPillowOnARandomSweep) {
  const Json sweep = read_json_file(test_data("images/resize_sweep.json").string());
  int checked = 0;
  int both_shrink = 0;
  for (const Json& c : sweep["cases"]) {
    const int source_width = c[0], source_height = c[1], width = c[2], height = c[3];
    SCOPED_TRACE(fmt::format("case {}: {}x{} -> {}x{}, resample {}", checked, source_width,
                             source_height, width, height, c[4].get<int>()));
    const Image source{source_width, source_height,
                       sweep_source_bytes(checked, size_t(source_width) * source_height * 3),
                       std::nullopt};
    const Image out = resize(source, width, height, resample_from_int(c[4], "resample"));
    EXPECT_EQ(out.width, width);
    EXPECT_EQ(out.height, height);
    EXPECT_EQ(xxh64_hex(out.rgb.data(), out.rgb.size()), c[5]);
    both_shrink += width < source_width && height < source_height;
    ++checked;
  }
  EXPECT_GE(checked, 500);
  EXPECT_GE(both_shrink, 150);
}

TEST(Images, MalformedFilesRaiseErrorsNamingTheFile) {
  int checked = 0;
  for (const Json& name : reference()["malformed"]) {
    const std::string file = name;
    SCOPED_TRACE(file);
    try {
      decode_image(read_bytes(file), file);
      ADD_FAILURE() << "decoded";
    } catch (const Error& error) {
      std::string message = error.what();
      EXPECT_TRUE(message.starts_with(file + ": ")) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(Images, TheHeaderDecidesTooLargeBeforeAnyPixel) {
  try {
    decode_image(read_bytes("huge_50000x50000.png"), "huge.png");
    ADD_FAILURE() << "decoded";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "huge.png: image of 50000x50000 is too large (at most 16384 pixels a side and "
              "67108864 in all)");
  }
}

TEST(Images, ConfigFieldsOfTheWrongTypeAreNamed) {
  auto message = [](const char* text) {
    try {
      Qwen2VLProcessor::from_config(Json::parse(text));
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"max_pixels": "many"})"),
            "preprocessor_config.json: max_pixels: expected a positive integer, got \"many\"");
  EXPECT_EQ(message(R"({"image_mean": [1, 2]})"),
            "preprocessor_config.json: image_mean: expected a number or 3 numbers, got [1,2]");
  EXPECT_EQ(message(R"({"resample": 0})"),
            "preprocessor_config.json: resample: resample 0 is not supported (1 LANCZOS, 2 "
            "BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)");
  EXPECT_EQ(message(R"({"do_resize": null, "unknown_key": {"a": 1}})"), "no error");
}

}  // namespace
}  // namespace xlacel::images
