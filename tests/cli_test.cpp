// The xlacel program as a user runs it: real model in, text out; bad input -> one line, exit 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/json_file.h"
#include "model_files/model_files.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;

using Result = testing::ProgramRun;

// A scratch directory of the running test's own: ctest runs tests in parallel, and two tests
// sharing one would overwrite each other's inputs and captured output.
fs::path test_scratch() {
  return testing::scratch_dir(std::string("cli/") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

Result run_xlacel(const std::vector<std::string>& args, const std::string& env_prefix = "") {
  return testing::run_xlacel(test_scratch(), args, env_prefix);
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

TEST(Cli, InspectShowsTheRealConfig) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  Result result = run_xlacel({"inspect", model});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("architecture: llama"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("layers: 30  hidden: 576"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("heads: 9  kv heads: 3"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("vocab: 49152"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Q4_1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("tensors: 272"), std::string::npos) << result.out;
}

TEST(Cli, TokenizeIdsPrintsOnlyIds) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  Result result = run_xlacel({"tokenize", "-m", model, "--ids", "Hello, world!"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_FALSE(result.out.empty());
  for (char c : result.out)
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(c)) || c == ' ' || c == '\n') << result.out;
}

TEST(Cli, ChatTemplateRendersMessages) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  fs::path messages = test_scratch() / "messages.json";
  write_file(messages, R"([{"role": "user", "content": "What is 2+2?"}])");
  Result result = run_xlacel(
      {"chat-template", "-m", model, "--messages", messages.string(), "--add-generation-prompt"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

// An HF directory built from the same tokenizer (the tokenizer.json transformers makes from the
// GGUF) and template gives the same ids and prompt as the GGUF itself.
TEST(Cli, HfDirectoryMatchesTheGgufRoute) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  fs::path dir = test_scratch() / "hf-smollm2";
  fs::create_directories(dir);
  fs::copy_file(testing::test_data("tokenizer/smollm2_tokenizer.json"), dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  ModelFiles gguf = ModelFiles::open(model);
  Json tokenizer_config = {{"chat_template", gguf.chat_template()->text},
                           {"bos_token", "<|im_start|>"},
                           {"eos_token", "<|im_end|>"}};
  write_file(dir / "tokenizer_config.json", tokenizer_config.dump());
  write_file(dir / "config.json", R"({"model_type": "llama", "vocab_size": 49152,
    "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": true,
    "bos_token_id": 1, "eos_token_id": 2})");
  std::string header = R"({"model.norm.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  uint64_t length = header.size();
  write_file(dir / "model.safetensors", std::string(reinterpret_cast<const char*>(&length), 8) +
                                            header + std::string(4, '\0'));

  Result inspect = run_xlacel({"inspect", dir.string()});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("Hugging Face directory"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("layers: 30  hidden: 576"), std::string::npos) << inspect.out;

  const std::string text = "Hi <|im_start|>user 12345 naïve café 🙂\n\n  x";
  Result from_dir = run_xlacel({"tokenize", "-m", dir.string(), "--ids", text});
  Result from_gguf = run_xlacel({"tokenize", "-m", model, "--ids", text});
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.err;
  EXPECT_EQ(from_dir.out, from_gguf.out);

  fs::path messages = test_scratch() / "messages.json";
  write_file(messages, R"([{"role": "system", "content": "Be brief."},
                          {"role": "user", "content": "Hi"}])");
  Result render_dir = run_xlacel({"chat-template", "-m", dir.string(), "--messages",
                                  messages.string(), "--add-generation-prompt"});
  Result render_gguf = run_xlacel(
      {"chat-template", "-m", model, "--messages", messages.string(), "--add-generation-prompt"});
  ASSERT_EQ(render_dir.exit_code, 0) << render_dir.err;
  EXPECT_EQ(render_dir.out, render_gguf.out);
  EXPECT_EQ(render_dir.out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// Every bad input: exit status 1, one line on stderr naming the file.
void expect_one_line_error(const std::vector<std::string>& args, const std::string& file) {
  Result result = run_xlacel(args);
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_NE(result.err.find(file), std::string::npos) << result.err;
}

TEST(Cli, BadInputIsOneLineAndExitOne) {
  fs::path scratch = test_scratch();
  fs::path truncated = scratch / "truncated.gguf";
  write_file(truncated, "GGUF\x03\x00\x00\x00");
  expect_one_line_error({"inspect", truncated.string()}, truncated.string());
  fs::path not_gguf = scratch / "not-a-model.gguf";
  write_file(not_gguf, "hello");
  expect_one_line_error({"inspect", not_gguf.string()}, not_gguf.string());
  expect_one_line_error({"inspect", "/nonexistent/dir/model.gguf"}, "/nonexistent/dir/model.gguf");
  fs::path empty_dir = scratch / "empty-hf-dir";
  fs::create_directories(empty_dir);
  expect_one_line_error({"inspect", empty_dir.string()}, "config.json");

  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  fs::path bad_messages = scratch / "bad-messages.json";
  write_file(bad_messages, "[{\"role\": ");
  expect_one_line_error({"chat-template", "-m", model, "--messages", bad_messages.string()},
                        bad_messages.string());
  write_file(bad_messages, R"([{"content": "no role"}])");
  expect_one_line_error({"chat-template", "-m", model, "--messages", bad_messages.string()},
                        bad_messages.string());
}

// Values outside a flag's domain, and flags CLI11 cannot parse, are one-line errors naming the
// flag, exit 1, before any model is run.
TEST(Cli, ValuesOutsideTheirDomainAreOneLineErrors) {
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--temp", "-1"}, "--temp"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--temp", "nan"}, "--temp"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--top-p", "7"}, "--top-p"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--top-k", "-1"}, "--top-k"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--min-p", "2"}, "--min-p"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--repeat-penalty", "0"}, "--repeat-penalty"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "-n", "0"}, "-n"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--threads", "-2"}, "--threads"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--small-prefill-bucket", "-1"},
       "--small-prefill-bucket"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--prefill-sequences", "0"},
       "--prefill-sequences"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--top-p", "abc"}, "--top-p"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--speculative", "eagle"}, "--speculative"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--draft-max", "0"}, "--draft-max"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--speculative", "off", "--draft-max", "-3"},
       "--draft-max"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--math", "quick"}, "--math"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--math", "fast", "--backend", "xla"},
       "--math"},
      {{"generate", "-m", tiny, "--prompt-ids", "1", "--math", "fast", "--weights", "f32"},
       "--math"},
      {{"chat", "-m", tiny, "--temp", "-1"}, "--temp"},
      {{"emit", "-m", tiny, "--graph", "decode", "--capacity", "0"}, "--capacity"},
      {{"emit", "-m", tiny, "--graph", "prefill", "--bucket", "-64"}, "--bucket"},
      {{"emit", "-m", tiny, "--graph", "decode", "--slots", "0"}, "--slots"},
      {{"emit", "-m", tiny, "--graph", "prefill", "--sequences", "0"}, "--sequences"},
      {{"emit", "-m", tiny, "--graph", "decode", "--sequences", "2"}, "--sequences"},
      {{"serve", "-m", tiny, "--parallel", "0"}, "--parallel"},
      {{"serve", "-m", tiny, "--port", "70000"}, "--port"},
      {{"bench", "-m", tiny, "--gen-tokens", "1"}, "--gen-tokens"},
      {{"generate", "--no-such-flag"}, "--no-such-flag"},
      {{"--top-p", "7"}, "subcommand"},
      {{}, "subcommand"},
  };
  for (const auto& [args, flag] : cases) {
    SCOPED_TRACE(::testing::PrintToString(args));
    Result result = run_xlacel(args);
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_TRUE(result.err.starts_with("xlacel: ")) << result.err;
    EXPECT_TRUE(result.err.ends_with("\n")) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_NE(result.err.find(flag), std::string::npos) << result.err;
  }
}

// --version: the version, the commit and the runtimes, exit 0.
TEST(Cli, VersionNamesTheCommitAndTheRuntimes) {
  Result result = run_xlacel({"--version"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(result.out.starts_with("xlacel 0.1.0 (commit ")) << result.out;
  EXPECT_NE(result.out.find("\niree: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0; CPU "
                            "kernels: "),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("\nxla cpu: xla-cpu-pjrt "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("PJRT C API 0."), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\nxla cuda: jax-cuda13-pjrt "), std::string::npos) << result.out;
  // The kernels' instruction set, which XLACEL_CPU_ISA and XLACEL_IREE_NO_PLANAR_KERNEL change.
  Result off = run_xlacel({"--version"}, "XLACEL_IREE_NO_PLANAR_KERNEL=1");
  EXPECT_NE(off.out.find("; CPU kernels: none (XLACEL_IREE_NO_PLANAR_KERNEL)\n"), std::string::npos)
      << off.out;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    Result avx2 = run_xlacel({"--version"}, "XLACEL_CPU_ISA=avx2");
    // (A build configured without the AVX2 object, XLACEL_KERNEL_ISAS, says so.)
    EXPECT_TRUE(avx2.out.find("; CPU kernels: AVX2, --math fast prefill exact, decode AVX2\n") !=
                    std::string::npos ||
                avx2.out.find("no kernel object for avx2") != std::string::npos)
        << avx2.out;
  }
  if (__builtin_cpu_supports("avxvnni")) {
    // AVX-VNNI's object for --math fast's decode (absent where the build left it out).
    Result avx_vnni = run_xlacel({"--version"}, "XLACEL_CPU_ISA=avxvnni");
    EXPECT_TRUE(avx_vnni.out.find("; CPU kernels: AVX2, --math fast prefill exact, decode "
                                  "AVX-VNNI\n") != std::string::npos ||
                avx_vnni.out.find("no kernel object for avxvnni") != std::string::npos ||
                avx_vnni.out.find("decode AVX2\n") != std::string::npos)
        << avx_vnni.out;
  } else {
    Result refused = run_xlacel({"--version"}, "XLACEL_CPU_ISA=avxvnni");
    EXPECT_NE(refused.out.find("XLACEL_CPU_ISA=avxvnni: this CPU does not run it"),
              std::string::npos)
        << refused.out;
  }
#endif
}

// `generate --prompt-ids` needs no tokenizer; ids that are not ids of the vocabulary, or ids
// given with a text prompt, are one-line errors naming the flag (before any graph compiles).
TEST(Cli, GeneratePromptIdsAreChecked) {
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "-m", tiny, "--prompt-ids", "1 x 3"},
        {"generate", "-m", tiny, "--prompt-ids", "1,512"},
        {"generate", "-m", tiny, "--prompt-ids", " , "},
        {"generate", "-m", tiny, "--prompt-ids", "1 2", "-p", "Hello"}}) {
    expect_one_line_error(args, "--prompt-ids");
  }
}

// A GGUF written without a vocabulary (the tiny quantized Llamas, run from token ids in
// engine_test) is inspected as having no tokenizer; a command that needs one is a one-line error.
TEST(Cli, GgufWithoutVocabularyHasNoTokenizer) {
  const std::string model = testing::test_data("models/tiny_quantized/q4_k.gguf").string();
  Result inspect = run_xlacel({"inspect", model});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("\ntokenizer: none\n"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("Q4_K"), std::string::npos) << inspect.out;
  expect_one_line_error({"tokenize", "-m", model, "hello"}, model + ": no tokenizer in the GGUF");
}

// `emit` takes --slots: the decode graph's rows read and write slots 0 .. bucket-1 of a cache of
// `slots` sequences; options the graph cannot honour are one-line errors naming the graph.
TEST(Cli, EmitTakesSlots) {
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  Result decode = run_xlacel({"emit", "-m", tiny, "--graph", "decode", "--bucket", "4", "--slots",
                              "4", "--capacity", "256"});
  ASSERT_EQ(decode.exit_code, 0) << decode.err;
  EXPECT_NE(decode.out.find("func.func @main(%tokens: tensor<4xi32>, %positions: tensor<4xi32>, "),
            std::string::npos)
      << decode.out.substr(0, 400);
  EXPECT_NE(decode.out.find("%k_cache_0: tensor<4x2x256x16xf32> {tf.aliasing_output = 1 : i32}"),
            std::string::npos);
  Result prefill = run_xlacel({"emit", "-m", tiny, "--graph", "prefill", "--bucket", "16"});
  ASSERT_EQ(prefill.exit_code, 0) << prefill.err;
  EXPECT_NE(prefill.out.find("%tokens: tensor<16xi32>, %slot: tensor<i32>, %start: tensor<i32>, "
                             "%valid_length: tensor<i32>"),
            std::string::npos);
  EXPECT_NE(prefill.out.find("%k_cache_0: tensor<1x2x512x16xf32>"), std::string::npos);

  Result too_many =
      run_xlacel({"emit", "-m", tiny, "--graph", "decode", "--bucket", "8", "--slots", "4"});
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_EQ(too_many.err,
            "xlacel: decode-b8-s4-c512-auto: decode bucket (8) exceeds the slots (4): row b runs "
            "slot b\n");
}

// A model of a family xlacel does not run is read (its config parses) but every command that
// opens it stops with one line naming the model and the supported families.
TEST(Cli, UnknownArchitectureIsOneLine) {
  fs::path dir = test_scratch() / "gpt_neox";
  fs::create_directories(dir);
  const fs::path tiny = testing::test_data("models/tiny_llama3");
  Json config = read_json_file((tiny / "config.json").string());
  config["model_type"] = "gpt_neox";
  write_file(dir / "config.json", config.dump());
  fs::copy_file(tiny / "model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"inspect", dir.string()},
                                               {"emit", "-m", dir.string(), "--graph", "decode"}}) {
    Result result = run_xlacel(args);
    EXPECT_EQ(result.exit_code, 1) << args[0];
    EXPECT_EQ(
        result.err,
        "xlacel: " + dir.string() +
            ": unknown architecture 'gpt_neox' (supported: cohere, command-r, gemma2, "
            "gemma3, gemma3_text, gpt-oss, gpt_oss, granite, granitehybrid, granitemoehybrid, "
            "lfm2, llama, mistral, mixtral, "
            "olmo2, olmoe, phi3, "
            "qwen2, qwen3, qwen3_moe, qwen3moe, smollm3, stablelm, starcoder2)\n")
        << args[0];
  }
}

}  // namespace
}  // namespace xlacel
