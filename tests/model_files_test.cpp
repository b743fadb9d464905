// Model-file readers against the gguf Python package (bit-exact dequantization), the real
// SmolLM2 GGUF, and corrupt inputs that must fail with one clear Error.
#include <gtest/gtest.h>

#include <xxhash.h>
#include <bit>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/json_file.h"
#include "model_files/gguf_file.h"
#include "model_files/model_files.h"
#include "model_files/safetensors_file.h"
#include "models/architecture.h"
#include "test_paths.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;
using testing::scratch_dir;
using testing::test_data;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Expects an Error whose message names `file` and contains `needle`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& file, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "multi-line: " << message;
  }
}

TEST(Gguf, ReadsEveryMetadataValueType) {
  GgufFile gguf(test_data("model_files/quant_types.gguf").string());
  EXPECT_EQ(gguf.version(), 3u);
  EXPECT_EQ(gguf.get_uint("test.u8"), 200u);
  EXPECT_EQ(gguf.get_int("test.i8"), -100);
  EXPECT_EQ(gguf.get_uint("test.u16"), 60000u);
  EXPECT_EQ(gguf.get_int("test.i16"), -30000);
  EXPECT_EQ(gguf.get_uint("test.u32"), 4000000000u);
  EXPECT_EQ(gguf.get_int("test.i32"), -2000000000);
  EXPECT_EQ(gguf.get_float("test.f32"), 0.15625);
  EXPECT_EQ(std::get<uint64_t>(gguf.find("test.u64")->value), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(gguf.get_int("test.i64"), -(int64_t{1} << 62));
  EXPECT_EQ(gguf.get_float("test.f64"), -2.5e-300);
  EXPECT_TRUE(gguf.get_bool("test.bool"));
  EXPECT_EQ(gguf.get_string("test.string"), "héllo wörld ✓");
  EXPECT_EQ(gguf.get_int_array("test.int_array"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(gguf.get_string_array("test.string_array"), (std::vector<std::string>{"a", "ß", ""}));
  const auto& nested = std::get<GgufArray>(gguf.find("test.nested_array")->value);
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(std::get<GgufArray>(nested.items[1].value).items.size(), 1u);
  expect_error([&] { gguf.get_string("test.u8"); }, gguf.path(), "expected string");
  expect_error([&] { gguf.get_int("no.such.key"); }, gguf.path(), "'no.such.key' is missing");
}

TEST(Gguf, DequantizesBitExactlyLikeTheGgufPackage) {
  GgufFile gguf(test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const auto& info : gguf.tensor_infos()) {
    if (info.name.ends_with(".expected")) continue;
    TensorView tensor = gguf.tensor(info);
    auto expected_view = gguf.find_tensor(info.name + ".expected");
    ASSERT_TRUE(expected_view.has_value()) << info.name;
    std::vector<float> got = to_f32(tensor);
    std::vector<float> expected = to_f32(*expected_view);
    ASSERT_EQ(got.size(), expected.size()) << info.name;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::memcmp(&got[i], &expected[i], 4), 0)
          << info.name << " (" << dtype_name(tensor.dtype) << ") element " << i << ": " << got[i]
          << " vs " << expected[i];
    }
    ++checked;
  }
  EXPECT_EQ(checked, 12);  // f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k mxfp4
}

TEST(Gguf, SmolLM2ConfigAndEveryTensorMatchTheReference) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);
  ModelFiles model = ModelFiles::open(model_path);
  const ModelConfig& config = model.config();
  EXPECT_EQ(config.architecture, "llama");
  EXPECT_EQ(config.num_layers, 30);
  EXPECT_EQ(config.hidden_size, 576);
  EXPECT_EQ(config.intermediate_size, 1536);
  EXPECT_EQ(config.num_heads, 9);
  EXPECT_EQ(config.num_kv_heads, 3);
  EXPECT_EQ(config.head_dim, 64);
  EXPECT_EQ(config.vocab_size, 49152);
  EXPECT_EQ(config.max_position_embeddings, 8192);
  EXPECT_EQ(config.rope_theta, 100000.0);
  EXPECT_FLOAT_EQ(static_cast<float>(config.rms_norm_eps), 1e-5f);
  EXPECT_TRUE(config.tie_word_embeddings);
  EXPECT_FALSE(config.attention_bias);
  EXPECT_TRUE(config.qk_rows_interleaved);  // q/k as llama.cpp's converter permuted them
  EXPECT_EQ(config.bos_token_id, 1);
  EXPECT_EQ(config.eos_token_ids, (std::vector<int64_t>{2}));
  ASSERT_TRUE(model.chat_template().has_value());
  EXPECT_NE(model.chat_template()->text.find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(model.special_token_strings().at("eos_token"), "<|im_end|>");

  Json reference = read_json_file(test_data("model_files/smollm2_dequant.json").string());
  ASSERT_EQ(model.tensors().size(), reference.size());
  for (const TensorView& tensor : model.tensors()) {
    ASSERT_TRUE(reference.contains(tensor.name)) << tensor.name;
    const Json& entry = reference[tensor.name];
    EXPECT_EQ(entry["dtype"].get<std::string>(), dtype_name(tensor.dtype)) << tensor.name;
    EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), tensor.shape) << tensor.name;
    std::vector<float> values = to_f32(tensor);
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(XXH64(values.data(), values.size() * 4, 0)));
    EXPECT_EQ(entry["xxh64"].get<std::string>(), hash) << tensor.name;
  }
}

// MXFP4 (gpt-oss's experts as llama.cpp stores them): every value of a tensor equals the gguf
// package's dequantization, bit for bit (tools/reference/gpt_oss_mxfp4.py).
TEST(Gguf, DequantizesMxfp4BitExactlyLikeTheGgufPackage) {
  const Json reference =
      Json::parse(read_bytes(test_data("models/converted/gpt_oss_mxfp4.json")))["dequantized"];
  ModelFiles model = ModelFiles::open(test_data("models/converted/gpt_oss_mxfp4.gguf").string());
  auto tensor = model.find_tensor(reference["tensor"].get<std::string>());
  ASSERT_TRUE(tensor.has_value());
  EXPECT_EQ(tensor->dtype, DType::kMXFP4);
  const std::vector<float> got = to_f32(*tensor);
  const auto want = reference["values"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    differing += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) ? 1 : 0;
  }
  EXPECT_EQ(differing, 0u);
}

TEST(Gguf, ReadsVersion2) {
  // v2 and v3 share one layout (v3 only added big-endian files), so the same bytes with the
  // version field set to 2 must read identically.
  std::string bytes = read_bytes(test_data("model_files/quant_types.gguf"));
  bytes[4] = 2;
  fs::path path = scratch_dir("gguf") / "v2.gguf";
  write_bytes(path, bytes);
  GgufFile gguf(path.string());
  EXPECT_EQ(gguf.version(), 2u);
  EXPECT_EQ(gguf.tensor_infos().size(), 24u);
  EXPECT_EQ(gguf.get_string("test.string"), "héllo wörld ✓");
}

TEST(Gguf, EveryTruncationFailsCleanly) {
  std::string bytes = read_bytes(test_data("model_files/quant_types.gguf"));
  fs::path path = scratch_dir("gguf") / "truncated.gguf";
  // Every cut inside the header and a stride through the data must raise, never crash.
  for (std::size_t cut = 0; cut < bytes.size(); cut += (cut < 2048 ? 1 : 997)) {
    write_bytes(path, bytes.substr(0, cut));
    EXPECT_THROW(GgufFile{path.string()}, Error) << "cut at " << cut;
  }
}

std::string gguf_header(uint32_t version, uint64_t tensors, uint64_t kvs) {
  std::string bytes = "GGUF";
  bytes.append(reinterpret_cast<const char*>(&version), 4);
  bytes.append(reinterpret_cast<const char*>(&tensors), 8);
  bytes.append(reinterpret_cast<const char*>(&kvs), 8);
  return bytes;
}

void append_string(std::string& bytes, const std::string& text) {
  uint64_t length = text.size();
  bytes.append(reinterpret_cast<const char*>(&length), 8);
  bytes += text;
}

TEST(Gguf, CorruptHeadersNameTheProblem) {
  fs::path path = scratch_dir("gguf") / "corrupt.gguf";
  auto check = [&](const std::string& bytes, const std::string& needle) {
    write_bytes(path, bytes);
    expect_error([&] { GgufFile{path.string()}; }, path.string(), needle);
  };
  check("GGML" + gguf_header(3, 0, 0).substr(4), "wrong magic");
  check(gguf_header(1, 0, 0), "version 1");
  check(gguf_header(0x03000000, 0, 0), "big-endian");
  check(gguf_header(3, uint64_t{1} << 60, 0), "tensor count");
  check(gguf_header(3, 0, uint64_t{1} << 60), "metadata count");

  std::string absurd_key = gguf_header(3, 0, 1);
  uint64_t huge = uint64_t{1} << 62;
  absurd_key.append(reinterpret_cast<const char*>(&huge), 8);
  absurd_key.append(16, '\0');
  check(absurd_key, "absurd length");

  std::string bad_utf8 = gguf_header(3, 0, 1);
  append_string(bad_utf8, "bad\xff key");
  check(bad_utf8, "not valid UTF-8");

  std::string huge_array = gguf_header(3, 0, 1);
  append_string(huge_array, "k");
  uint32_t array_type = 9, element_type = 4;
  huge_array.append(reinterpret_cast<const char*>(&array_type), 4);
  huge_array.append(reinterpret_cast<const char*>(&element_type), 4);
  huge_array.append(reinterpret_cast<const char*>(&huge), 8);
  check(huge_array, "array length");

  // One F32 tensor of 1024 elements whose data would lie past the end of the file.
  std::string past_end = gguf_header(3, 1, 0);
  append_string(past_end, "t");
  uint32_t dims = 1, f32 = 0;
  uint64_t extent = 1024, offset = 0;
  past_end.append(reinterpret_cast<const char*>(&dims), 4);
  past_end.append(reinterpret_cast<const char*>(&extent), 8);
  past_end.append(reinterpret_cast<const char*>(&f32), 4);
  past_end.append(reinterpret_cast<const char*>(&offset), 8);
  past_end.resize(64, '\0');
  check(past_end, "runs past the end");
}

// Writes a safetensors file from a header and data bytes.
void write_safetensors(const fs::path& path, const std::string& header, const std::string& data) {
  uint64_t length = header.size();
  std::string bytes(reinterpret_cast<const char*>(&length), 8);
  write_bytes(path, bytes + header + data);
}

TEST(Safetensors, ReadsF32F16Bf16) {
  fs::path path = scratch_dir("safetensors") / "ok.safetensors";
  float f32[2] = {1.5f, -2.0f};
  uint16_t f16[2] = {0x3C00, 0xC000};   // 1, -2
  uint16_t bf16[2] = {0x3FC0, 0x4040};  // 1.5, 3
  std::string data(reinterpret_cast<const char*>(f32), 8);
  data.append(reinterpret_cast<const char*>(f16), 4);
  data.append(reinterpret_cast<const char*>(bf16), 4);
  write_safetensors(path,
                    R"({"__metadata__":{"format":"pt"},)"
                    R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},)"
                    R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]}})",
                    data);
  SafetensorsFile file(path.string());
  ASSERT_EQ(file.tensors().size(), 3u);
  std::map<std::string, std::vector<float>> values;
  for (const auto& t : file.tensors()) values[t.name] = to_f32(t);
  EXPECT_EQ(values["a"], (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(values["b"], (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(values["c"], (std::vector<float>{1.5f, 3.0f}));
}

TEST(Safetensors, EmptyTensorsAreValid) {
  // Found by fuzzing: a zero-element tensor once reached memcpy with a null pointer.
  fs::path path = scratch_dir("safetensors") / "empty.safetensors";
  write_safetensors(path, R"({"a":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", "");
  SafetensorsFile file(path.string());
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_TRUE(to_f32(file.tensors()[0]).empty());
}

TEST(Safetensors, CorruptHeadersNameTheProblem) {
  fs::path path = scratch_dir("safetensors") / "bad.safetensors";
  auto check = [&](const std::string& header, const std::string& data, const std::string& needle) {
    write_safetensors(path, header, data);
    expect_error([&] { SafetensorsFile{path.string()}; }, path.string(), needle);
  };
  std::string eight(8, '\0');
  check(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", eight, "outside");
  check(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight, "need 12");
  check(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", eight, "dtype 'I64'");
  check(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
        eight, "overlap");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight, "gap");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight, "cover 4 of the 8");
  check(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", eight, "invalid JSON");
  check(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", eight, "non-integer");
  check(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})",
        eight, "overflows");
  check(R"([1,2])", "", "not a JSON object");
  // Found by fuzzing: a number out of double range is a JSON error, not an escaped exception.
  check(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})", eight, "invalid JSON");

  uint64_t absurd = uint64_t{1} << 60;
  write_bytes(path, std::string(reinterpret_cast<const char*>(&absurd), 8));
  expect_error([&] { SafetensorsFile{path.string()}; }, path.string(), "absurd");
  write_bytes(path, "abc");
  expect_error([&] { SafetensorsFile{path.string()}; }, path.string(), "truncated");
}

// A minimal HF directory: config, generation config, two safetensors shards with an index.
fs::path make_hf_directory(const std::string& name, const std::string& config) {
  fs::path dir = scratch_dir("hf") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_bytes(dir / "config.json", config);
  write_bytes(dir / "generation_config.json", R"({"eos_token_id": [2, 7]})");
  write_bytes(
      dir / "tokenizer_config.json",
      R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": "{{ x }}"})");
  float one = 1.0f;
  std::string four(reinterpret_cast<const char*>(&one), 4);
  write_safetensors(dir / "part-1.safetensors",
                    R"({"w1":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four);
  write_safetensors(dir / "part-2.safetensors",
                    R"({"w2":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four);
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"w1": "part-1.safetensors", "w2": "part-2.safetensors"}})");
  return dir;
}

const char* kLlama3Config = R"({
  "model_type": "llama", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2})";

TEST(HfDirectory, ReadsConfigShardsAndTokenizerConfig) {
  fs::path dir = make_hf_directory("llama3", kLlama3Config);
  ModelFiles model = ModelFiles::open(dir.string());
  const ModelConfig& config = model.config();
  EXPECT_EQ(config.architecture, "llama");
  EXPECT_FALSE(config.qk_rows_interleaved);  // HF's own rows
  EXPECT_EQ(config.head_dim, 16);
  EXPECT_EQ(config.num_kv_heads, 2);
  EXPECT_EQ(config.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(config.rope_scaling.factor, 32.0);
  EXPECT_EQ(config.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(config.tie_word_embeddings);
  EXPECT_EQ(config.eos_token_ids, (std::vector<int64_t>{2, 7}));  // generation_config wins
  EXPECT_EQ(model.tensors().size(), 2u);
  EXPECT_TRUE(model.find_tensor("w2").has_value());
  EXPECT_EQ(model.special_token_strings().at("bos_token"), "<s>");
  EXPECT_EQ(model.special_token_strings().at("eos_token"), "</s>");
  ASSERT_TRUE(model.chat_template().has_value());
  EXPECT_EQ(model.chat_template()->text, "{{ x }}");
}

TEST(HfDirectory, ReadsTransformers5RopeParameters) {
  // transformers 5 saves rope settings as `rope_parameters`, with rope_theta inside.
  Json config = Json::parse(kLlama3Config);
  config.erase("rope_scaling");
  config.erase("rope_theta");
  config["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 250000.0},
                               {"factor", 8.0},           {"low_freq_factor", 1.0},
                               {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  ModelFiles model = ModelFiles::open(make_hf_directory("rope_parameters", config.dump()).string());
  EXPECT_EQ(model.config().rope_theta, 250000.0);
  EXPECT_EQ(model.config().rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(model.config().rope_scaling.factor, 8.0);
  EXPECT_EQ(model.config().rope_scaling.original_max_position_embeddings, 64);
}

// A Gemma 3 config.json of the published (transformers 4) form: top-level rope_theta and
// rope_local_base_freq, rope_scaling for the global layers, a sliding_window_pattern; omitted
// values take Gemma3TextConfig's defaults.
TEST(HfDirectory, Gemma3LegacyConfigTakesTransformersDefaults) {
  Json config = Json::parse(kLlama3Config);
  config["model_type"] = "gemma3_text";
  config["num_hidden_layers"] = 6;
  config["rope_theta"] = 1000000.0;
  config["rope_local_base_freq"] = 10000.0;
  config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  config["sliding_window"] = 512;
  config["sliding_window_pattern"] = 3;
  config["hidden_activation"] = "gelu_pytorch_tanh";
  const ModelConfig c =
      ModelFiles::open(make_hf_directory("gemma3_legacy", config.dump()).string()).config();
  EXPECT_EQ(c.rope_theta, 1000000.0);
  EXPECT_EQ(c.rope_local_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLinear);
  EXPECT_EQ(c.rope_local_scaling.type, RopeScaling::Type::kNone);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.query_pre_attn_scalar, 256.0);
  EXPECT_FALSE(c.final_logit_softcapping.has_value());
  EXPECT_EQ(c.layer_types,
            (std::vector<std::string>{"sliding_attention", "sliding_attention", "full_attention",
                                      "sliding_attention", "sliding_attention", "full_attention"}));
  EXPECT_TRUE(c.is_sliding_layer(0));
  EXPECT_FALSE(c.is_sliding_layer(2));
}

// LFM2's published config (LFM2-1.2B: block_ff_dim and full_attn_idxs, no intermediate_size
// or layer_types) reads as Lfm2Config does; the tiny model's transformers 5 config and the GGUF
// llama.cpp's converter writes of it (kv heads per layer, 0 on conv layers) read alike.
TEST(HfDirectory, Lfm2ConfigsReadAsTransformersAndTheConverterWriteThem) {
  const ModelConfig published =
      ModelFiles::open(make_hf_directory("lfm2_published",
                                         read_bytes(test_data("models/real_size/lfm2-1.2b.json")))
                           .string())
          .config();
  EXPECT_EQ(published.intermediate_size, 8192);  // 256 * ceil(int(2 * 12288 / 3) / 256)
  EXPECT_EQ(published.conv_kernel, 3);
  EXPECT_TRUE(published.tie_word_embeddings);
  EXPECT_EQ(published.rope_theta, 1000000.0);
  EXPECT_EQ(published.rms_norm_eps, 1e-5);
  std::vector<int64_t> attention;
  for (int64_t l = 0; l < published.num_layers; ++l) {
    if (!published.is_conv_layer(l)) attention.push_back(l);
  }
  EXPECT_EQ(attention, (std::vector<int64_t>{2, 5, 8, 10, 12, 14}));

  const ModelConfig hf = ModelFiles::open(testing::test_data("models/lfm2").string()).config();
  const ModelConfig gguf =
      ModelFiles::open(testing::test_data("models/converted/lfm2.gguf").string()).config();
  for (const ModelConfig* c : {&hf, &gguf}) {
    EXPECT_EQ(c->layer_types, (std::vector<std::string>{"conv", "conv", "full_attention", "conv"}));
    EXPECT_EQ(c->intermediate_size, 64);  // 16 * ceil(int(2 * 96 / 3) / 16)
    EXPECT_EQ(c->num_kv_heads, 2);
    EXPECT_EQ(c->conv_kernel, 3);
    EXPECT_FALSE(c->conv_bias);
  }
}

// Granite 4.0-H's published configs (h-tiny: experts beside the shared MLP; h-micro: the shared
// MLP alone) read as GraniteMoeHybridConfig does; the tiny model (transformers' layer type names
// put back as published) and the GGUF llama.cpp's converter writes of it read alike.
TEST(HfDirectory, GraniteHybridConfigsReadAsTransformersAndTheConverterWriteThem) {
  auto published = [](const char* name) {
    return ModelFiles::open(make_hf_directory(name, read_bytes(test_data(fmt::format(
                                                        "models/real_size/{}.json", name))))
                                .string())
        .config();
  };
  const ModelConfig tiny = published("granite-4.0-h-tiny");
  EXPECT_EQ(tiny.ssm_heads, 48);
  EXPECT_EQ(tiny.ssm_head_dim, 64);
  EXPECT_EQ(tiny.ssm_state, 128);
  EXPECT_EQ(tiny.conv_kernel, 4);
  EXPECT_TRUE(tiny.conv_bias);
  EXPECT_EQ(tiny.num_experts, 64);
  EXPECT_EQ(tiny.expert_intermediate_size, 512);
  EXPECT_EQ(tiny.shared_expert_intermediate_size, 1024);
  EXPECT_TRUE(tiny.skips_rope(5));
  EXPECT_TRUE(tiny.is_mamba_layer(4));
  EXPECT_FALSE(tiny.is_mamba_layer(5));
  const ModelConfig micro = published("granite-4.0-h-micro");
  EXPECT_EQ(micro.num_experts, 0);
  EXPECT_EQ(micro.intermediate_size, 8192);  // shared_intermediate_size
  EXPECT_EQ(micro.shared_expert_intermediate_size, 0);

  const ModelConfig hf =
      ModelFiles::open(testing::test_data("models/granitemoehybrid").string()).config();
  const ModelConfig gguf =
      ModelFiles::open(testing::test_data("models/converted/granitemoehybrid.gguf").string())
          .config();
  for (const ModelConfig* c : {&hf, &gguf}) {
    EXPECT_EQ(c->layer_types,
              (std::vector<std::string>{"mamba", "full_attention", "mamba", "mamba"}));
    EXPECT_EQ(c->ssm_heads, 8);
    EXPECT_EQ(c->ssm_head_dim, 16);
    EXPECT_EQ(c->ssm_state, 16);
    EXPECT_EQ(c->ssm_groups, 2);
    EXPECT_EQ(c->conv_kernel, 4);
    EXPECT_TRUE(c->conv_bias);
    EXPECT_FALSE(c->ssm_proj_bias);
    EXPECT_EQ(c->num_experts, 3);
    EXPECT_EQ(c->shared_expert_intermediate_size, 48);
    EXPECT_EQ(c->rope_skipped, std::vector<bool>(4, true));
    EXPECT_EQ(c->residual_multiplier, 0.5);
  }
}

// What a family's graph cannot compute is refused with one line naming the file and the field.
TEST(HfDirectory, UnsupportedFamilyOptionsAreErrors) {
  struct Case {
    const char* type;
    Json changes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"qwen3", {{"use_sliding_window", true}}, "use_sliding_window is not supported for qwen3"},
      {"llama", {{"hidden_act", "gelu"}}, "hidden_act 'gelu' is not supported for llama"},
      {"gemma2", {{"layer_types", {"full_attention"}}}, "field 'layer_types' must list one type"},
      {"qwen3_moe",
       {{"num_experts", 4},
        {"num_experts_per_tok", 2},
        {"moe_intermediate_size", 8},
        {"mlp_only_layers", {0}}},
       "mlp_only_layers is not supported"},
      {"mixtral", {{"num_local_experts", 4}, {"num_experts_per_tok", 5}}, "not a valid mixture"},
      {"granitemoehybrid",
       {{"layer_types", {"mamba", "mamba2"}}},
       "field 'layer_types' holds 'mamba2' (supported: mamba, attention)"},
      {"granitemoehybrid",
       {{"layer_types", {"mamba", "attention"}}, {"mamba_n_heads", 3}},
       "mamba_n_heads (3) x mamba_d_head (42) must be mamba_expand x hidden_size (128)"},
      {"granitemoehybrid",
       {{"layer_types", {"mamba", "attention"}}, {"mamba_n_heads", 4}, {"mamba_n_groups", 3}},
       "the heads a multiple of the groups (3)"},
      {"granitemoehybrid",
       {{"layer_types", {"attention", "mamba"}}, {"mamba_d_conv", 1}},
       "mamba layers need a convolution of at least 2 taps, got 1"},
  };
  for (const Case& test : cases) {
    Json config = Json::parse(kLlama3Config);
    config["model_type"] = test.type;
    for (const auto& [key, value] : test.changes.items()) config[key] = value;
    const fs::path dir = make_hf_directory(std::string("bad_") + test.type, config.dump());
    try {
      ModelFiles::open(dir.string());
      ADD_FAILURE() << test.type << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(test.message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
  }
}

TEST(HfDirectory, TinyLlama3ReferenceModelReads) {
  ModelFiles model = ModelFiles::open(test_data("models/tiny_llama3").string());
  EXPECT_EQ(model.config().num_kv_heads, 2);
  EXPECT_EQ(model.config().rope_theta, 500000.0);
  EXPECT_EQ(model.config().rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_FALSE(model.config().tie_word_embeddings);
  EXPECT_TRUE(model.find_tensor("lm_head.weight").has_value());
}

TEST(HfDirectory, Qwen2HasAttentionBias) {
  Json config = Json::parse(kLlama3Config);
  config["model_type"] = "qwen2";
  config.erase("rope_scaling");
  ModelFiles model = ModelFiles::open(make_hf_directory("qwen2", config.dump()).string());
  EXPECT_TRUE(model.config().attention_bias);
  EXPECT_EQ(model.config().rope_scaling.type, RopeScaling::Type::kNone);
}

// The reader takes any model_type; whether xlacel runs it is the architecture registry's call,
// whose error names the model and lists what is supported.
TEST(HfDirectory, UnknownArchitectureReadsButHasNoArchitecture) {
  Json config = Json::parse(kLlama3Config);
  config["model_type"] = "gpt_neox";
  fs::path dir = make_hf_directory("unknown", config.dump());
  ModelFiles model = ModelFiles::open(dir.string());
  EXPECT_EQ(model.config().architecture, "gpt_neox");
  expect_error(
      [&] { models::architecture_for(model.config(), model.path()); }, model.path(),
      "unknown architecture 'gpt_neox' (supported: cohere, command-r, gemma2, gemma3, "
      "gemma3_text, gpt-oss, gpt_oss, granite, granitehybrid, granitemoehybrid, lfm2, llama, "
      "mistral, mixtral, olmo2, "
      "olmoe, phi3, qwen2, qwen3, "
      "qwen3_moe, qwen3moe, smollm3, stablelm, starcoder2)");
  expect_error([&] { models::architecture_for(model.config()); },
               "gpt_neox: ", "unknown architecture 'gpt_neox'");
  for (const char* known : {"llama", "mistral", "qwen2"}) {
    config["model_type"] = known;
    ModelFiles supported = ModelFiles::open(make_hf_directory(known, config.dump()).string());
    EXPECT_EQ(models::architecture_for(supported.config()).name(), "llama") << known;
  }
}

TEST(HfDirectory, BadConfigsNameTheProblem) {
  auto check = [](Json config, const std::string& needle) {
    fs::path dir = make_hf_directory("bad", config.dump());
    expect_error([&] { ModelFiles::open(dir.string()); }, (dir / "config.json").string(), needle);
  };
  Json base = Json::parse(kLlama3Config);
  Json missing = base;
  missing.erase("hidden_size");
  check(missing, "missing field 'hidden_size'");
  Json wrong_type = base;
  wrong_type["num_hidden_layers"] = "two";
  check(wrong_type, "'num_hidden_layers' must be an integer");
  Json heads = base;
  heads["num_key_value_heads"] = 3;
  check(heads, "not a multiple");
  Json rope = base;
  rope["rope_scaling"]["rope_type"] = "dynamic";  // dynamic NTK: by the sequence's length
  check(rope,
        "rope_scaling type 'dynamic' is not supported (supported: default, linear, llama3, "
        "longrope, yarn)");
  Json quantized = base;  // MXFP4 (gpt-oss's published experts) is read; other methods are not
  quantized["quantization_config"] = {{"quant_method", "gptq"}};
  check(quantized,
        "quantization_config (quant_method 'gptq'): of quantized HF checkpoints only MXFP4 ones");

  fs::path dir = make_hf_directory("escape", kLlama3Config);
  write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"w": "../x"}})");
  expect_error([&] { ModelFiles::open(dir.string()); }, "model.safetensors.index.json",
               "not a file beside the index");
  write_bytes(dir / "config.json", "{ not json");
  expect_error([&] { ModelFiles::open(dir.string()); }, "config.json", "invalid JSON");
  expect_error([] { ModelFiles::open("/nonexistent/model.gguf"); }, "/nonexistent/model.gguf",
               "no such file");
}

}  // namespace
}  // namespace xlacel
